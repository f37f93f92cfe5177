// faults-client drives a strata-server cluster with GET/SET/DEL from several clients,
// records every operation's invocation and completion, and checks afterwards that the
// history is linearizable (porcupine, one register per key) and that no acknowledged write
// was lost. bench/cluster-faults.sh runs it while it injects faults.
//
//	faults-client -addrs H:P,H:P,... -duration 60s -clients 12 -keys 48 -out DIR
//	              [-ready-file F] [-seed N] [...]
//	faults-client -check DIR/history.jsonl [-out DIR]
//
// Phases: the workload for -duration; then, once -ready-file exists (the faults are
// healed), the final phase: every key read through the cluster and on each replica
// (READONLY) until they agree; then the check. The history goes to DIR/history.jsonl and
// the counts to DIR/summary.txt (key=value lines).
//
// Exit status: 0 no violation; 1 a violation (non-linearizable key, lost acknowledged
// write, final value never written, replicas that never agree); 2 the linearizability
// search timed out (nothing found in the time given); 3 a usage or setup error; 4 keys
// without any successful final read (the cluster did not recover).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

const (
	exitOK        = 0
	exitViolation = 1
	exitTimeout   = 2
	exitSetup     = 3
	exitNoFinal   = 4
)

type config struct {
	addrs        []string
	duration     time.Duration
	clients      int
	keys         int
	readRatio    float64
	delRatio     float64
	timeout      time.Duration
	maxRedirects int
	seed         uint64
	out          string
	readyFile    string
	finalTimeout time.Duration
	checkTimeout time.Duration
	keyTimeout   time.Duration
	expiring     int
	password     string
}

func main() {
	var cfg config
	var addrs, checkFile string
	flag.StringVar(&addrs, "addrs", "", "the cluster's client addresses, comma-separated host:port")
	flag.DurationVar(&cfg.duration, "duration", time.Minute, "how long the workload runs")
	flag.IntVar(&cfg.clients, "clients", 12, "client goroutines, each one operation at a time")
	flag.IntVar(&cfg.keys, "keys", 48, "keys (k0, k1, ...), spread over the slots by their hash")
	flag.Float64Var(&cfg.readRatio, "reads", 0.5, "share of GETs")
	flag.Float64Var(&cfg.delRatio, "dels", 0.05, "share of DELs (the rest are SETs)")
	flag.DurationVar(&cfg.timeout, "timeout", 2*time.Second, "read and write timeout of one attempt (and dial timeout)")
	flag.IntVar(&cfg.maxRedirects, "max-redirects", 4, "MOVED redirects and retries (only of attempts that cannot have taken effect)")
	flag.Uint64Var(&cfg.seed, "seed", 1, "seed of the clients' choices")
	flag.StringVar(&cfg.out, "out", "", "directory for history.jsonl, summary.txt and violation evidence")
	flag.StringVar(&cfg.readyFile, "ready-file", "", "before the final phase, wait until this file exists (the faults are healed); when it holds host:port addresses (comma-separated), they are the nodes whose replicas the final phase compares (the cluster's members then)")
	flag.DurationVar(&cfg.finalTimeout, "final-timeout", 90*time.Second, "longest wait for -ready-file, and for the final reads to agree")
	flag.DurationVar(&cfg.checkTimeout, "check-timeout", 5*time.Minute, "longest linearizability search, all keys together")
	flag.DurationVar(&cfg.keyTimeout, "key-timeout", 20*time.Second, "longest linearizability search of one key (bounds its memory too)")
	flag.IntVar(&cfg.expiring, "expiring", 2, "goroutines that also SET keys of their own (x0, x1, ...) with a PX of 50-500 ms, outside the checked history: the nodes' active expiry deletes them in batches under the faults")
	flag.StringVar(&cfg.password, "pass", "", "the password every connection to a node authenticates with (the nodes' requirepass)")
	flag.StringVar(&checkFile, "check", "", "only check this history.jsonl")
	flag.Parse()

	if checkFile != "" {
		recs, err := readHistory(checkFile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "faults-client:", err)
			os.Exit(exitSetup)
		}
		if n := reclassify(recs); n > 0 {
			fmt.Printf("%d writes recorded as of unknown outcome are failed by this version's rules\n", n)
		}
		st := countOps(recs)
		fmt.Printf("history %s: %s\n", checkFile, st)
		rep := check(recs, checkOptions{Timeout: cfg.checkTimeout, KeyTimeout: cfg.keyTimeout, OutDir: cfg.out}, os.Stdout)
		printReport(os.Stdout, rep)
		os.Exit(exitCode(rep, nil))
	}

	for _, a := range strings.Split(addrs, ",") {
		if a = strings.TrimSpace(a); a != "" {
			cfg.addrs = append(cfg.addrs, a)
		}
	}
	switch {
	case len(cfg.addrs) == 0:
		usage("-addrs is required")
	case cfg.out == "":
		usage("-out is required")
	case cfg.clients < 1 || cfg.keys < 1:
		usage("-clients and -keys must be positive")
	case cfg.readRatio < 0 || cfg.delRatio < 0 || cfg.readRatio+cfg.delRatio > 1:
		usage("-reads and -dels must be shares adding up to at most 1")
	}
	if err := os.MkdirAll(cfg.out, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "faults-client:", err)
		os.Exit(exitSetup)
	}
	// go-redis logs every failed dial; under faults that is a flood, kept out of the report.
	if f, err := os.Create(filepath.Join(cfg.out, "go-redis.log")); err == nil {
		defer f.Close()
		redis.SetLogger(fileLogger{f})
	}
	os.Exit(run(cfg))
}

// reclassify applies notApplied to the errors of a saved history's unknown writes (a history
// written by an earlier version of the client, whose rules were narrower).
func reclassify(recs []Record) int {
	n := 0
	for i, r := range recs {
		if r.Status != StatusUnknown {
			continue
		}
		if notApplied(errors.New(strings.TrimPrefix(r.Err, "outcome unknown: "))) {
			recs[i].Status = StatusFailed
			recs[i].Return = r.Call
			n++
		}
	}
	return n
}

type fileLogger struct{ f *os.File }

func (l fileLogger) Printf(_ context.Context, format string, v ...interface{}) {
	fmt.Fprintf(l.f, time.Now().Format("15:04:05.000 ")+format+"\n", v...)
}

func usage(msg string) {
	fmt.Fprintln(os.Stderr, "faults-client:", msg)
	flag.Usage()
	os.Exit(exitSetup)
}

// outcomeUnknown replaces the error of an attempt that may have reached the server and
// got no answer saying what became of it. It has no Unwrap, so go-redis does not retry
// it: a retried write could take effect twice, once after the operation completed,
// which a register's history cannot explain and the checker would blame on the server.
type outcomeUnknown struct{ cause error }

func (e *outcomeUnknown) Error() string { return "outcome unknown: " + e.cause.Error() }

// notApplied: the attempt cannot have taken effect: a redirect, no leader known, no
// connection made, or the leader's read barrier failed. go-redis redirects or retries the
// first three; the last ends the operation.
//
// The barrier: strata-server runs a write only after its leader has passed a linearizable
// read barrier in its term (docs/replication.md), so an error from the barrier ("ERR
// replication: group G: linearizable read: ...", or the timeout "ERR the write's outcome is
// unknown (timed out waiting for a linearizable read barrier)") means the write was never
// proposed. Were it applied all the same, the checker would report it: a value read that no
// write could have written.
func notApplied(err error) bool {
	s := err.Error()
	for _, prefix := range []string{"MOVED ", "ASK ", "CLUSTERDOWN ", "TRYAGAIN "} {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	if strings.HasPrefix(s, "ERR ") && strings.Contains(s, "linearizable read") {
		return true
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	return errors.Is(err, redis.ErrPoolTimeout) || errors.Is(err, redis.ErrClosed)
}

// attemptHook sits on every node's client, so it sees each attempt of a command
// separately (the cluster client's redirects and retries call it once each).
type attemptHook struct{ addr string }

// nodeKey: the context value under which an operation gets the address of the node its
// last attempt went to (a *string), for the history.
type nodeKey struct{}

func (attemptHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h attemptHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if node, ok := ctx.Value(nodeKey{}).(*string); ok {
			*node = h.addr
		}
		err := next(ctx, cmd)
		if err == nil || errors.Is(err, redis.Nil) || notApplied(err) {
			return err
		}
		return &outcomeUnknown{cause: err}
	}
}

func (attemptHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func newClusterClient(cfg config) *redis.ClusterClient {
	return redis.NewClusterClient(&redis.ClusterOptions{
		Addrs:        cfg.addrs,
		Password:     cfg.password,
		Protocol:     2,
		DialTimeout:  cfg.timeout,
		ReadTimeout:  cfg.timeout,
		WriteTimeout: cfg.timeout,
		PoolTimeout:  cfg.timeout,
		PoolSize:     cfg.clients + 2,
		MaxRedirects: cfg.maxRedirects,
		// Dial errors are retried by the cluster client; one dial per attempt is enough.
		DialerRetries:   1,
		MinRetryBackoff: 20 * time.Millisecond,
		MaxRetryBackoff: 200 * time.Millisecond,
		// A node that stopped answering stays the slots' master in the client's table
		// until the table is reloaded; MOVED reloads it, a dead node answers nothing.
		ClusterStateReloadInterval: time.Second,
		FailingTimeoutSeconds:      1,
		DisableIdentity:            true,
		DisableRoutingPolicies:     true,
		MaintNotificationsConfig:   &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
		NewClient: func(opt *redis.Options) *redis.Client {
			c := redis.NewClient(opt)
			c.AddHook(attemptHook{addr: opt.Addr})
			return c
		},
	})
}

// clock: nanoseconds since the run started, from the monotonic clock.
type clock struct{ t0 time.Time }

func (c clock) now() int64 { return time.Since(c.t0).Nanoseconds() }

type counters struct{ ok, failed, unknown atomic.Int64 }

func (c *counters) String() string {
	return fmt.Sprintf("ok=%d failed=%d unknown=%d", c.ok.Load(), c.failed.Load(), c.unknown.Load())
}

func keyName(i int) string { return fmt.Sprintf("k%d", i) }

func run(cfg config) int {
	clk := clock{time.Now()}
	fmt.Printf("t0 %s: the history's times are nanoseconds since then\n", clk.t0.Format("15:04:05.000000"))
	rdb := newClusterClient(cfg)
	defer rdb.Close()
	ctx := context.Background()

	if err := waitForCluster(ctx, rdb, 30*time.Second); err != nil {
		fmt.Fprintln(os.Stderr, "faults-client: the cluster does not answer:", err)
		return exitSetup
	}
	describeKeys(ctx, rdb, cfg.keys)

	var procs atomic.Int64 // porcupine client ids: a client whose write's outcome is unknown continues as a new one
	procs.Store(int64(cfg.clients))
	var cnt counters
	perClient := make([][]Record, cfg.clients)
	stop := time.Now().Add(cfg.duration)
	var wg sync.WaitGroup
	for c := 0; c < cfg.clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			perClient[c] = workload(ctx, rdb, cfg, c, stop, clk, &procs, &cnt)
		}(c)
	}
	var expCnt counters
	var ewg sync.WaitGroup
	for e := 0; e < cfg.expiring; e++ {
		ewg.Add(1)
		go func(e int) {
			defer ewg.Done()
			expiringWrites(ctx, rdb, cfg, e, stop, &expCnt)
		}(e)
	}
	done := make(chan struct{})
	go progress(done, clk, &cnt)
	wg.Wait()
	ewg.Wait()
	if cfg.expiring > 0 {
		fmt.Printf("expiring SETs: %s\n", &expCnt)
	}
	close(done)
	fmt.Printf("workload done at %.1fs: %s\n", time.Since(clk.t0).Seconds(), &cnt)

	var recs []Record
	for _, rs := range perClient {
		recs = append(recs, rs...)
	}

	if cfg.readyFile != "" {
		fmt.Printf("waiting for %s\n", cfg.readyFile)
		if !waitForFile(cfg.readyFile, cfg.finalTimeout) {
			fmt.Printf("%s did not appear within %s: final reads go on anyway\n", cfg.readyFile, cfg.finalTimeout)
		} else if b, err := os.ReadFile(cfg.readyFile); err == nil && strings.TrimSpace(string(b)) != "" {
			cfg.addrs = strings.Split(strings.TrimSpace(string(b)), ",")
			fmt.Printf("final phase compares the replicas of %s\n", strings.Join(cfg.addrs, ","))
		}
	}
	finalRecs, diverged := finalPhase(ctx, rdb, cfg, clk, int(procs.Add(1)))
	recs = append(recs, finalRecs...)
	sort.SliceStable(recs, func(i, j int) bool { return recs[i].Call < recs[j].Call })

	hist := filepath.Join(cfg.out, "history.jsonl")
	if err := writeHistory(hist, recs); err != nil {
		fmt.Fprintln(os.Stderr, "faults-client: writing the history:", err)
	}
	st := countOps(recs)
	fmt.Printf("history: %s (%s)\n", st, hist)
	rep := check(recs, checkOptions{Timeout: cfg.checkTimeout, KeyTimeout: cfg.keyTimeout, OutDir: cfg.out}, os.Stdout)
	printReport(os.Stdout, rep)
	if len(diverged) > 0 {
		fmt.Printf("replicas that never agreed with the cluster's final value: %d\n", len(diverged))
		for _, d := range diverged {
			fmt.Printf("  %s\n", d)
		}
	}
	code := exitCode(rep, diverged)
	writeSummary(filepath.Join(cfg.out, "summary.txt"), clk.t0, st, rep, diverged, code)
	fmt.Printf("exit status %d\n", code)
	return code
}

func exitCode(rep *Report, diverged []string) int {
	switch {
	case rep.Violation() || len(diverged) > 0:
		return exitViolation
	case len(rep.TimedOut) > 0:
		return exitTimeout
	case len(rep.MissingFinal) > 0:
		return exitNoFinal
	}
	return exitOK
}

// workload runs one client's operations until stop, one at a time.
func workload(ctx context.Context, rdb *redis.ClusterClient, cfg config, c int, stop time.Time,
	clk clock, procs *atomic.Int64, cnt *counters) []Record {
	rng := rand.New(rand.NewPCG(cfg.seed, uint64(c)))
	proc := c
	var recs []Record
	for seq := 0; time.Now().Before(stop); seq++ {
		key := keyName(rng.IntN(cfg.keys))
		r := Record{Client: proc, Key: key}
		x := rng.Float64()
		var err error
		ctx := context.WithValue(ctx, nodeKey{}, &r.Node)
		r.Call = clk.now()
		switch {
		case x < cfg.readRatio:
			r.Op = "get"
			var v string
			v, err = rdb.Get(ctx, key).Result()
			if errors.Is(err, redis.Nil) {
				v, err = "", nil
			}
			r.Value = v
		case x < cfg.readRatio+cfg.delRatio:
			r.Op = "del"
			r.Deleted, err = rdb.Del(ctx, key).Result()
		default:
			r.Op = "set"
			// Unique across the run: reads name the write they saw.
			r.Value = fmt.Sprintf("c%d-%d", c, seq)
			// SET, SETEX with a time past the run's end, or MSET of the one key: to the model
			// each is a set, and each is a blind write on the server (it waits for no earlier
			// write of the key to be applied, only comes after it in its group's order).
			switch seq % 3 {
			case 0:
				err = rdb.Set(ctx, key, r.Value, 0).Err()
			case 1:
				err = rdb.SetEx(ctx, key, r.Value, 24*time.Hour).Err()
			default:
				err = rdb.MSet(ctx, key, r.Value).Err()
			}
		}
		r.Return = clk.now()
		var unknown *outcomeUnknown
		switch {
		case err == nil:
			r.Status = StatusOK
			cnt.ok.Add(1)
		case r.Op != "get" && errors.As(err, &unknown):
			r.Status, r.Return, r.Err = StatusUnknown, -1, err.Error()
			cnt.unknown.Add(1)
			proc = int(procs.Add(1)) - 1
		default:
			r.Status, r.Err = StatusFailed, err.Error()
			cnt.failed.Add(1)
		}
		if err != nil {
			// Whatever failed, the slot table may be stale (a leader that died answers no MOVED).
			rdb.ReloadState(ctx)
			time.Sleep(10 * time.Millisecond)
		}
		recs = append(recs, r)
	}
	return recs
}

// expiringWrites SETs keys x0..x1999 with a PX of 50-500 ms until stop, one at a time, so
// that active expiry deletes keys throughout the faults (in batches, one write per partition).
// Not part of the history: an expired key reads as absent whether or not it was deleted.
func expiringWrites(ctx context.Context, rdb *redis.ClusterClient, cfg config, e int,
	stop time.Time, cnt *counters) {
	rng := rand.New(rand.NewPCG(cfg.seed^0x5eed, uint64(e)))
	for time.Now().Before(stop) {
		key := fmt.Sprintf("x%d", rng.IntN(2000))
		ttl := time.Duration(50+rng.IntN(450)) * time.Millisecond
		if err := rdb.Set(ctx, key, "v", ttl).Err(); err != nil {
			cnt.failed.Add(1)
			rdb.ReloadState(ctx)
			time.Sleep(10 * time.Millisecond)
		} else {
			cnt.ok.Add(1)
		}
	}
}

func progress(done <-chan struct{}, clk clock, cnt *counters) {
	t := time.NewTicker(10 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
			fmt.Printf("t=%.0fs %s\n", time.Since(clk.t0).Seconds(), cnt)
		}
	}
}

func waitForCluster(ctx context.Context, rdb *redis.ClusterClient, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		err := rdb.ForEachShard(ctx, func(ctx context.Context, c *redis.Client) error {
			return c.Ping(ctx).Err()
		})
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		rdb.ReloadState(ctx)
		time.Sleep(500 * time.Millisecond)
	}
}

// describeKeys prints how the keys fall on the cluster's slot ranges (partitions).
func describeKeys(ctx context.Context, rdb *redis.ClusterClient, keys int) {
	slots, err := rdb.ClusterSlots(ctx).Result()
	if err != nil {
		fmt.Printf("CLUSTER SLOTS: %v\n", err)
		return
	}
	perRange := make([]int, len(slots))
	for i := 0; i < keys; i++ {
		s := int(keySlot(keyName(i)))
		for j, r := range slots {
			if s >= r.Start && s <= r.End {
				perRange[j]++
			}
		}
	}
	var parts []string
	for j, r := range slots {
		parts = append(parts, fmt.Sprintf("%d-%d:%d", r.Start, r.End, perRange[j]))
	}
	fmt.Printf("%d keys over %d slot ranges (range:keys): %s\n", keys, len(slots), strings.Join(parts, " "))
}

// keySlot is Redis Cluster's slot of a key without a hash tag: CRC16 (XMODEM) mod 16384.
func keySlot(key string) uint16 {
	var crc uint16
	for i := 0; i < len(key); i++ {
		crc ^= uint16(key[i]) << 8
		for b := 0; b < 8; b++ {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc % 16384
}

func waitForFile(path string, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(path); err == nil {
			return true
		}
		time.Sleep(200 * time.Millisecond)
	}
	return false
}

// finalPhase reads every key through the cluster (linearizable reads, recorded as final
// reads) and from every node with READONLY (each replica's applied state), round after
// round, until each key's replicas all hold what the cluster read, or finalTimeout passes.
// No client writes any more, so once the unknown writes have settled the replicas must
// agree. Returns the final reads and, for keys that never agreed, what each node held.
func finalPhase(ctx context.Context, rdb *redis.ClusterClient, cfg config, clk clock, proc int) ([]Record, []string) {
	nodes := make([]*redis.Client, len(cfg.addrs))
	for i, a := range cfg.addrs {
		nodes[i] = redis.NewClient(&redis.Options{
			Addr: a, Password: cfg.password, Protocol: 2, DisableIdentity: true,
			DialTimeout: cfg.timeout, ReadTimeout: cfg.timeout, WriteTimeout: cfg.timeout,
			MaxRetries: -1, PoolSize: 1,
			MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
			// READONLY is a connection's state: every new connection sends it.
			OnConnect: func(ctx context.Context, cn *redis.Conn) error {
				return cn.ReadOnly(ctx).Err()
			},
		})
		defer nodes[i].Close()
	}
	var recs []Record
	agreed := make([]bool, cfg.keys)
	var last []string
	deadline := time.Now().Add(cfg.finalTimeout)
	for round := 1; ; round++ {
		last = last[:0]
		pending := 0
		for i := 0; i < cfg.keys; i++ {
			if agreed[i] {
				continue
			}
			key := keyName(i)
			r := Record{Client: proc, Op: "get", Key: key, Final: true}
			r.Call = clk.now()
			v, err := rdb.Get(context.WithValue(ctx, nodeKey{}, &r.Node), key).Result()
			if errors.Is(err, redis.Nil) {
				v, err = "", nil
			}
			r.Return = clk.now()
			if err != nil {
				pending++
				last = append(last, fmt.Sprintf("key %s: cluster read failed: %v", key, err))
				rdb.ReloadState(ctx)
				continue
			}
			r.Value, r.Status = v, StatusOK
			recs = append(recs, r)
			held := make([]string, len(nodes))
			same := true
			for n, c := range nodes {
				nv, err := c.Get(ctx, key).Result()
				switch {
				case errors.Is(err, redis.Nil):
					nv = ""
				case err != nil && strings.HasPrefix(err.Error(), "MOVED "):
					held[n] = cfg.addrs[n] + "=(no replica)"
					continue // the node holds no replica of the key's partition
				case err != nil:
					held[n] = fmt.Sprintf("%s=error(%v)", cfg.addrs[n], err)
					same = false
					continue
				}
				held[n] = fmt.Sprintf("%s=%s", cfg.addrs[n], showValue(nv))
				if nv != v {
					same = false
				}
			}
			if same {
				agreed[i] = true
			} else {
				pending++
				last = append(last, fmt.Sprintf("key %s: cluster read %s, replicas %s", key, showValue(v), strings.Join(held, " ")))
			}
		}
		if pending == 0 {
			fmt.Printf("final phase: every key read and its replicas agree (round %d)\n", round)
			return recs, nil
		}
		if time.Now().After(deadline) {
			fmt.Printf("final phase: %d keys unsettled after %s\n", pending, cfg.finalTimeout)
			// Keys never read at all are reported by the check (no final read); the rest
			// are replicas that disagree.
			var diverged []string
			for _, l := range last {
				if !strings.Contains(l, "cluster read failed") {
					diverged = append(diverged, l)
				} else {
					fmt.Printf("  %s\n", l)
				}
			}
			return recs, diverged
		}
		time.Sleep(500 * time.Millisecond)
	}
}

type opStats struct {
	total, ok, failed, unknown int
	byOp                       map[string][3]int // ok, failed, unknown
}

func countOps(recs []Record) opStats {
	st := opStats{byOp: map[string][3]int{}}
	for _, r := range recs {
		st.total++
		c := st.byOp[r.Op]
		switch r.Status {
		case StatusOK:
			st.ok++
			c[0]++
		case StatusFailed:
			st.failed++
			c[1]++
		case StatusUnknown:
			st.unknown++
			c[2]++
		}
		st.byOp[r.Op] = c
	}
	return st
}

func (st opStats) String() string {
	s := fmt.Sprintf("%d operations: %d ok, %d failed, %d unknown", st.total, st.ok, st.failed, st.unknown)
	for _, op := range []string{"get", "set", "del"} {
		c := st.byOp[op]
		s += fmt.Sprintf("; %s %d/%d/%d", op, c[0], c[1], c[2])
	}
	return s
}

func writeSummary(path string, t0 time.Time, st opStats, rep *Report, diverged []string, code int) {
	var b strings.Builder
	kv := func(k string, v any) { fmt.Fprintf(&b, "%s=%v\n", k, v) }
	kv("t0_unix_ms", t0.UnixMilli())
	kv("ops_total", st.total)
	kv("ops_ok", st.ok)
	kv("ops_failed", st.failed)
	kv("ops_unknown", st.unknown)
	for _, op := range []string{"get", "set", "del"} {
		c := st.byOp[op]
		kv(op+"_ok", c[0])
		kv(op+"_failed", c[1])
		kv(op+"_unknown", c[2])
	}
	kv("keys", rep.Keys)
	kv("checked_ops", rep.Checked)
	kv("pruned_unknown_writes", rep.Pruned)
	kv("verdict", rep.Verdict())
	kv("illegal_keys", strings.Join(rep.Illegal, ","))
	kv("witnesses", len(rep.Witnesses))
	kv("timed_out_keys", strings.Join(rep.TimedOut, ","))
	kv("lost_writes", len(rep.Lost))
	kv("phantom_values", len(rep.Phantoms))
	kv("keys_without_final_read", len(rep.MissingFinal))
	kv("replicas_diverged", len(diverged))
	kv("check_seconds", fmt.Sprintf("%.1f", rep.Elapsed.Seconds()))
	kv("exit", code)
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "faults-client: writing the summary:", err)
	}
}
