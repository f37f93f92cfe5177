package main

// Checking a history: linearizability per key (porcupine), and the acknowledged-write and
// final-value checks on the final reads.

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
)

// LostWrite: an acknowledged write that every legal order places last on its key, and a
// final read that does not return it.
type LostWrite struct {
	Key   string
	Write Record
	Final Record
}

// Phantom: a final value that no write (acknowledged or unknown) ever wrote.
type Phantom struct {
	Key   string
	Final Record
	// FailedWrite: a write the client counted as failed wrote this value (the server
	// refused it, yet it took effect).
	FailedWrite *Record
}

// Report is the outcome of checking a history.
type Report struct {
	Keys     int
	Checked  int // operations given to porcupine
	Pruned   int // unknown writes left out as unobservable (see prunable)
	Illegal  []string
	TimedOut []string
	// Reports of illegal keys: the history as text and porcupine's HTML.
	Evidence     []string
	Witnesses    []Witness // patterns that prove a violation without a search
	Lost         []LostWrite
	Phantoms     []Phantom
	MissingFinal []string // keys with no successful final read
	Elapsed      time.Duration
}

// Violation: the history is proven wrong.
func (r *Report) Violation() bool {
	return len(r.Illegal) > 0 || len(r.Witnesses) > 0 || len(r.Lost) > 0 || len(r.Phantoms) > 0
}

// Verdict in one word: the linearizability result over every key.
func (r *Report) Verdict() porcupine.CheckResult {
	switch {
	case len(r.Illegal) > 0 || len(r.Witnesses) > 0:
		return porcupine.Illegal
	case len(r.TimedOut) > 0:
		return porcupine.Unknown
	}
	return porcupine.Ok
}

// checkOptions bound the linearizability search and say where evidence goes.
type checkOptions struct {
	// Timeout: the whole search, all keys; KeyTimeout: one key's. A key whose search is cut
	// short is reported as timed out. The search's memory grows with its time (about
	// 100 MB/s on an illegal key with a few dozen unknown writes), so KeyTimeout also
	// bounds memory.
	Timeout, KeyTimeout time.Duration
	// OutDir: when not empty, each illegal key's history and visualization go there, and
	// every witness to witnesses.txt.
	OutDir string
}

// check runs every check over recs.
func check(recs []Record, opt checkOptions, log io.Writer) *Report {
	start := time.Now()
	deadline := start.Add(opt.Timeout)
	outDir := opt.OutDir
	end := endOfHistory(recs)
	keys := byKey(recs)
	rep := &Report{Keys: len(keys)}

	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	sort.Strings(names)

	results := make([]porcupine.CheckResult, len(names))
	opsOf := make([][]porcupine.Operation, len(names))
	for i, k := range names {
		ops, pruned := operations(keys[k], end, true)
		opsOf[i] = ops
		rep.Checked += len(ops)
		rep.Pruned += pruned
	}
	// One key per worker: porcupine runs one goroutine per partition, and a single key's
	// history is one partition.
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < min(runtime.GOMAXPROCS(0), 2); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				left := min(time.Until(deadline), opt.KeyTimeout)
				if left <= 0 {
					results[i] = porcupine.Unknown
					continue
				}
				results[i] = porcupine.CheckOperationsTimeout(registerModel, opsOf[i], left)
				if results[i] != porcupine.Ok {
					// An abandoned or exhausted search leaves gigabytes behind.
					debug.FreeOSMemory()
				}
			}
		}()
	}
	for i := range names {
		next <- i
	}
	close(next)
	wg.Wait()

	for i, k := range names {
		switch results[i] {
		case porcupine.Illegal:
			rep.Illegal = append(rep.Illegal, k)
			if outDir != "" {
				files, err := writeEvidence(outDir, k, keys[k], opsOf[i])
				if err != nil {
					fmt.Fprintf(log, "evidence for key %s: %v\n", k, err)
				}
				rep.Evidence = append(rep.Evidence, files...)
			}
		case porcupine.Unknown:
			rep.TimedOut = append(rep.TimedOut, k)
		}
		rep.Witnesses = append(rep.Witnesses, witnesses(k, keys[k])...)
		lost, phantom, missing := finalChecks(k, keys[k])
		if lost != nil {
			rep.Lost = append(rep.Lost, *lost)
		}
		if phantom != nil {
			rep.Phantoms = append(rep.Phantoms, *phantom)
		}
		if missing {
			rep.MissingFinal = append(rep.MissingFinal, k)
		}
	}
	if outDir != "" && len(rep.Witnesses) > 0 {
		var b strings.Builder
		for _, w := range rep.Witnesses {
			fmt.Fprintf(&b, "%s\n", describeWitness(w))
		}
		path := filepath.Join(outDir, "witnesses.txt")
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			fmt.Fprintf(log, "witnesses: %v\n", err)
		} else {
			rep.Evidence = append(rep.Evidence, path)
		}
	}
	rep.Elapsed = time.Since(start)
	return rep
}

// finalChecks looks at one key's last final read (recs sorted by call):
//   - lost: the acknowledged write that must be the key's last before the read (it returned
//     before the read began, and every other write returned before it was invoked) is not
//     what the read returned;
//   - phantom: the read returned a value no acknowledged or unknown write wrote;
//   - missing: no final read succeeded.
//
// Porcupine finds both as illegal histories too (the final reads are in the history); these
// name the write in question, which is what a reader of the report wants first.
func finalChecks(key string, recs []Record) (lost *LostWrite, phantom *Phantom, missing bool) {
	var final *Record
	for i := range recs {
		r := &recs[i]
		if r.Final && r.Op == "get" && r.Status == StatusOK && (final == nil || r.Call > final.Call) {
			final = r
		}
	}
	if final == nil {
		return nil, nil, true
	}
	var writes []Record
	written := map[string]bool{}
	var failedWith = map[string]Record{}
	for _, r := range recs {
		if !r.isWrite() {
			continue
		}
		if r.Status == StatusFailed {
			if r.Op == "set" {
				failedWith[r.Value] = r
			}
			continue
		}
		writes = append(writes, r)
		if r.Op == "set" {
			written[r.Value] = true
		}
	}
	for i, w := range writes {
		if w.Status != StatusOK || w.Return >= final.Call {
			continue
		}
		last := true
		for j, u := range writes {
			if j != i && (u.Status == StatusUnknown || u.Return >= w.Call) {
				last = false
				break
			}
		}
		if !last {
			continue
		}
		want := ""
		if w.Op == "set" {
			want = w.Value
		}
		if final.Value != want {
			lost = &LostWrite{Key: key, Write: w, Final: *final}
		}
		break
	}
	if final.Value != "" && !written[final.Value] {
		phantom = &Phantom{Key: key, Final: *final}
		if f, ok := failedWith[final.Value]; ok {
			phantom.FailedWrite = &f
		}
	}
	return lost, phantom, false
}

// writeEvidence writes an illegal key's records as text (failed ones included, marked),
// headed by where porcupine's search got stuck, and porcupine's visualization.
func writeEvidence(outDir, key string, recs []Record, ops []porcupine.Operation) ([]string, error) {
	safe := strings.Map(func(r rune) rune {
		if r == '/' || r == ' ' {
			return '_'
		}
		return r
	}, key)
	// The verbose search again, for the partial linearizations.
	res, info := porcupine.CheckOperationsVerbose(registerModel, ops, 2*time.Minute)
	var b strings.Builder
	fmt.Fprintf(&b, "# key %s: %d records, by call time (ms since start; return -1: never completed)\n", key, len(recs))
	var stuck *porcupine.Operation
	if res == porcupine.Illegal {
		// The longest order porcupine could build; of the operations it leaves out, the one
		// that returned first is where every order breaks (a read no order explains, most
		// often).
		var longest []porcupine.Operation
		for _, part := range info.PartialLinearizationsOperations() {
			for _, l := range part {
				if len(l) > len(longest) {
					longest = l
				}
			}
		}
		in := map[[2]int64]bool{}
		for _, op := range longest {
			in[[2]int64{op.Call, int64(op.ClientId)}] = true
		}
		for i := range ops {
			if !in[[2]int64{ops[i].Call, int64(ops[i].ClientId)}] && (stuck == nil || ops[i].Return < stuck.Return) {
				stuck = &ops[i]
			}
		}
		fmt.Fprintf(&b, "# the longest legal order holds %d of %d operations", len(longest), len(ops))
		if stuck != nil {
			fmt.Fprintf(&b, "; the first to return of those left out (marked >>>): %s at [%.3f, %.3f]",
				registerModel.DescribeOperation(stuck.Input, stuck.Output), float64(stuck.Call)/1e6, float64(stuck.Return)/1e6)
		}
		if len(longest) > 0 {
			last := longest[len(longest)-1]
			fmt.Fprintf(&b, "\n# the order ends with: %s", registerModel.DescribeOperation(last.Input, last.Output))
		}
		b.WriteString("\n")
	}
	for _, r := range recs {
		mark := ""
		if stuck != nil && r.Status != StatusFailed && r.Call == stuck.Call && r.Client == stuck.ClientId {
			mark = ">>> "
		}
		fmt.Fprintf(&b, "%s%s\n", mark, describeRecord(r))
	}
	txt := filepath.Join(outDir, "violation-"+safe+".txt")
	if err := os.WriteFile(txt, []byte(b.String()), 0o644); err != nil {
		return nil, err
	}
	files := []string{txt}
	if res != porcupine.Illegal {
		return files, fmt.Errorf("the verbose check answered %s", res)
	}
	html := filepath.Join(outDir, "violation-"+safe+".html")
	if err := porcupine.VisualizePath(registerModel, info, html); err != nil {
		return files, err
	}
	return append(files, html), nil
}

func describeRecord(r Record) string {
	ms := func(t int64) string {
		if t < 0 {
			return "-1"
		}
		return fmt.Sprintf("%.3f", float64(t)/1e6)
	}
	what := ""
	switch r.Op {
	case "get":
		what = fmt.Sprintf("get %s -> %s", r.Key, showValue(r.Value))
	case "set":
		what = fmt.Sprintf("set %s %s", r.Key, r.Value)
	case "del":
		what = fmt.Sprintf("del %s -> %d", r.Key, r.Deleted)
	}
	s := fmt.Sprintf("[%s, %s] client %d %-7s %s", ms(r.Call), ms(r.Return), r.Client, r.Status, what)
	if r.Node != "" {
		s += " @" + r.Node
	}
	if r.Final {
		s += " (final read)"
	}
	if r.Err != "" {
		s += " err: " + r.Err
	}
	return s
}

// printReport writes the check's part of the summary.
func printReport(w io.Writer, rep *Report) {
	fmt.Fprintf(w, "checked %d operations on %d keys in %s (%d unobservable unknown writes left out)\n",
		rep.Checked, rep.Keys, rep.Elapsed.Round(time.Millisecond), rep.Pruned)
	fmt.Fprintf(w, "linearizability: %s\n", rep.Verdict())
	if len(rep.Illegal) > 0 {
		fmt.Fprintf(w, "  keys porcupine found illegal: %s\n", strings.Join(rep.Illegal, " "))
	}
	if len(rep.TimedOut) > 0 {
		fmt.Fprintf(w, "  keys whose search was cut short (time or memory bound): %s\n", strings.Join(rep.TimedOut, " "))
	}
	fmt.Fprintf(w, "  witnesses (violations shown without a search): %d", len(rep.Witnesses))
	wkeys := map[string]bool{}
	for _, x := range rep.Witnesses {
		wkeys[x.Key] = true
	}
	if len(wkeys) > 0 {
		var ks []string
		for k := range wkeys {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		fmt.Fprintf(w, " on keys %s", strings.Join(ks, " "))
	}
	fmt.Fprintln(w)
	for i, x := range rep.Witnesses {
		if i == 5 {
			fmt.Fprintf(w, "  ... (all in witnesses.txt)\n")
			break
		}
		fmt.Fprintf(w, "  %s\n", describeWitness(x))
	}
	for _, f := range rep.Evidence {
		fmt.Fprintf(w, "  evidence: %s\n", f)
	}
	fmt.Fprintf(w, "acknowledged writes lost: %d\n", len(rep.Lost))
	for _, l := range rep.Lost {
		fmt.Fprintf(w, "  key %s: must end as %s, final read %s\n    write: %s\n    final: %s\n",
			l.Key, showValue(l.Write.Value), showValue(l.Final.Value), describeRecord(l.Write), describeRecord(l.Final))
	}
	fmt.Fprintf(w, "final values never written: %d\n", len(rep.Phantoms))
	for _, p := range rep.Phantoms {
		fmt.Fprintf(w, "  key %s: %s\n", p.Key, describeRecord(p.Final))
		if p.FailedWrite != nil {
			fmt.Fprintf(w, "    written by a write the server refused: %s\n", describeRecord(*p.FailedWrite))
		}
	}
	if len(rep.MissingFinal) > 0 {
		fmt.Fprintf(w, "keys without a final read: %s\n", strings.Join(rep.MissingFinal, " "))
	}
}
