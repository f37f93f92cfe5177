package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/redis/go-redis/v9"
)

// Shorthands for hand-made histories: times in arbitrary units; ret -1 = never answered.
func set(client int, key, v string, call, ret int64) Record {
	st := StatusOK
	if ret < 0 {
		st = StatusUnknown
	}
	return Record{Client: client, Op: "set", Key: key, Value: v, Status: st, Call: call, Return: ret}
}

func get(client int, key, v string, call, ret int64) Record {
	return Record{Client: client, Op: "get", Key: key, Value: v, Status: StatusOK, Call: call, Return: ret}
}

func del(client int, key string, n int64, call, ret int64) Record {
	st := StatusOK
	if ret < 0 {
		st = StatusUnknown
	}
	return Record{Client: client, Op: "del", Key: key, Deleted: n, Status: st, Call: call, Return: ret}
}

func final(r Record) Record { r.Final = true; return r }

func testOpts(dir string) checkOptions {
	return checkOptions{Timeout: 10 * time.Second, KeyTimeout: 10 * time.Second, OutDir: dir}
}

// verdict: porcupine's alone (the witnesses are tested on their own).
func verdict(t *testing.T, recs []Record) porcupine.CheckResult {
	t.Helper()
	rep := check(recs, testOpts(""), os.Stderr)
	switch {
	case len(rep.Illegal) > 0:
		return porcupine.Illegal
	case len(rep.TimedOut) > 0:
		return porcupine.Unknown
	}
	return porcupine.Ok
}

func TestStaleReadAfterAcknowledgedWriteIsIllegal(t *testing.T) {
	h := []Record{
		set(0, "x", "a", 0, 10),
		set(0, "x", "b", 20, 30),
		get(1, "x", "a", 40, 50), // b was acknowledged before this read began
	}
	if got := verdict(t, h); got != porcupine.Illegal {
		t.Fatalf("stale read: got %s, want Illegal", got)
	}
}

func TestConcurrentHistoryIsLinearizable(t *testing.T) {
	h := []Record{
		set(0, "x", "a", 0, 10),
		set(1, "x", "b", 5, 30), // overlaps everything below until 30
		get(2, "x", "b", 12, 15),
		get(2, "x", "b", 16, 18),
		get(0, "x", "b", 35, 40),
		set(0, "y", "c", 0, 5),
		del(1, "y", 1, 31, 33),
		get(1, "y", "", 34, 36),
		del(2, "y", 0, 37, 39),
	}
	if got := verdict(t, h); got != porcupine.Ok {
		t.Fatalf("got %s, want Ok", got)
	}
}

func TestReadOfWriteFromTheFutureIsIllegal(t *testing.T) {
	h := []Record{
		get(0, "x", "a", 0, 10),
		set(1, "x", "a", 20, 30), // invoked after the read returned
	}
	if got := verdict(t, h); got != porcupine.Illegal {
		t.Fatalf("got %s, want Illegal", got)
	}
}

func TestDeleteOfAbsentKeyAnsweringOneIsIllegal(t *testing.T) {
	h := []Record{del(0, "x", 1, 0, 10)}
	if got := verdict(t, h); got != porcupine.Illegal {
		t.Fatalf("got %s, want Illegal", got)
	}
}

func TestUnknownWriteMayTakeEffectLateButOnlyOnce(t *testing.T) {
	base := []Record{
		set(0, "x", "a", 0, 10),
		set(1, "x", "b", 20, -1), // timed out: may land any time after 20
		get(2, "x", "a", 100, 110),
		get(2, "x", "b", 200, 210), // it landed between the reads: fine
	}
	if got := verdict(t, base); got != porcupine.Ok {
		t.Fatalf("late unknown write: got %s, want Ok", got)
	}
	again := append(append([]Record{}, base...), get(2, "x", "a", 300, 310))
	if got := verdict(t, again); got != porcupine.Illegal {
		t.Fatalf("value going back after the unknown write was seen: got %s, want Illegal", got)
	}
}

func TestFailedWritesAreLeftOut(t *testing.T) {
	failed := set(1, "x", "b", 20, 30)
	failed.Status = StatusFailed
	h := []Record{set(0, "x", "a", 0, 10), failed, get(2, "x", "a", 40, 50)}
	if got := verdict(t, h); got != porcupine.Ok {
		t.Fatalf("got %s, want Ok", got)
	}
	// A refused write that nonetheless shows up is a violation.
	h = append(h, get(2, "x", "b", 60, 70))
	if got := verdict(t, h); got != porcupine.Illegal {
		t.Fatalf("got %s, want Illegal", got)
	}
}

func TestLostAcknowledgedWrite(t *testing.T) {
	h := []Record{
		set(0, "x", "a", 0, 10),
		set(1, "x", "b", 20, 30),
		final(get(2, "x", "a", 100, 110)),
	}
	rep := check(h, testOpts(""), os.Stderr)
	if len(rep.Lost) != 1 || rep.Lost[0].Write.Value != "b" {
		t.Fatalf("lost writes: %+v, want the write of b", rep.Lost)
	}
	if rep.Verdict() != porcupine.Illegal || !rep.Violation() {
		t.Fatalf("verdict %s", rep.Verdict())
	}
	// An unknown write after b may be the last one: then nothing is known to be lost, and
	// porcupine decides (here: a is not b's successor, so still illegal).
	h2 := append(append([]Record{}, h[:2]...), set(3, "x", "c", 40, -1), final(get(2, "x", "c", 100, 110)))
	rep = check(h2, testOpts(""), os.Stderr)
	if len(rep.Lost) != 0 || rep.Verdict() != porcupine.Ok {
		t.Fatalf("lost %+v verdict %s, want none and Ok", rep.Lost, rep.Verdict())
	}
	// A final read of a deleted key.
	h3 := []Record{set(0, "x", "a", 0, 10), del(1, "x", 1, 20, 30), final(get(2, "x", "", 40, 50))}
	rep = check(h3, testOpts(""), os.Stderr)
	if len(rep.Lost) != 0 || rep.Verdict() != porcupine.Ok {
		t.Fatalf("lost %+v verdict %s, want none and Ok", rep.Lost, rep.Verdict())
	}
}

func TestPhantomFinalValue(t *testing.T) {
	refused := set(1, "x", "z", 20, 30)
	refused.Status, refused.Err = StatusFailed, "MOVED 1 10.0.0.1:1"
	h := []Record{set(0, "x", "a", 0, 10), refused, final(get(2, "x", "z", 100, 110))}
	rep := check(h, testOpts(""), os.Stderr)
	if len(rep.Phantoms) != 1 || rep.Phantoms[0].FailedWrite == nil {
		t.Fatalf("phantoms %+v, want one naming the refused write", rep.Phantoms)
	}
}

func TestMissingFinalRead(t *testing.T) {
	rep := check([]Record{set(0, "x", "a", 0, 10)}, testOpts(""), os.Stderr)
	if len(rep.MissingFinal) != 1 || exitCode(rep, nil) != exitNoFinal {
		t.Fatalf("missing %v exit %d", rep.MissingFinal, exitCode(rep, nil))
	}
}

func TestEvidenceWrittenForIllegalKey(t *testing.T) {
	dir := t.TempDir()
	h := []Record{
		set(0, "x", "a", 0, 10),
		set(0, "x", "b", 20, 30),
		get(1, "x", "a", 40, 50),
		set(0, "y", "c", 0, 10),
	}
	rep := check(h, testOpts(dir), os.Stderr)
	if len(rep.Illegal) != 1 || rep.Illegal[0] != "x" {
		t.Fatalf("illegal %v", rep.Illegal)
	}
	for _, name := range []string{"violation-x.txt", "violation-x.html"} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.Size() == 0 {
			t.Fatalf("%s: %v", name, err)
		}
	}
}

func TestHistoryRoundTrip(t *testing.T) {
	h := []Record{set(0, "x", "a", 0, 10), set(1, "x", "b", 5, -1), del(2, "x", 1, 6, 9), final(get(3, "x", "", 20, 30))}
	p := filepath.Join(t.TempDir(), "h.jsonl")
	if err := writeHistory(p, h); err != nil {
		t.Fatal(err)
	}
	back, err := readHistory(p)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(back) != fmt.Sprint(h) {
		t.Fatalf("got %v, want %v", back, h)
	}
}

// Pruning unobservable unknown writes must never change a verdict: random small histories
// (linearizable or not), checked with and without it.
func TestPruningKeepsVerdicts(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	values := []string{"", "a", "b", "c", "d"}
	pruned := 0
	for n := 0; n < 3000; n++ {
		var h []Record
		for i := 0; i < 2+rng.IntN(7); i++ {
			call := int64(rng.IntN(100))
			ret := call + 1 + int64(rng.IntN(40))
			if rng.IntN(4) == 0 {
				ret = -1
			}
			switch rng.IntN(3) {
			case 0:
				if ret < 0 {
					continue // a read without an answer is dropped by the client
				}
				h = append(h, get(i, "x", values[rng.IntN(len(values))], call, ret))
			case 1:
				h = append(h, set(i, "x", values[1+rng.IntN(len(values)-1)], call, ret))
			case 2:
				h = append(h, del(i, "x", int64(rng.IntN(2)), call, ret))
			}
		}
		end := endOfHistory(h)
		ops, p := operations(h, end, true)
		pruned += p
		all, _ := operations(h, end, false)
		a := porcupine.CheckOperations(registerModel, all)
		b := porcupine.CheckOperations(registerModel, ops)
		if a != b {
			t.Fatalf("history %d: full %v, pruned %v\n%v", n, a, b, h)
		}
	}
	if pruned == 0 {
		t.Fatal("no write was ever pruned: the test tests nothing")
	}
}

func TestKeySlot(t *testing.T) {
	// Slots as Redis Cluster computes them (CLUSTER KEYSLOT).
	for key, want := range map[string]uint16{"foo": 12182, "bar": 5061, "hello": 866, "123456789": 0x31c3} {
		if got := keySlot(key); got != want {
			t.Errorf("keySlot(%q) = %d, want %d", key, got, want)
		}
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestAttemptClassification(t *testing.T) {
	for _, err := range []error{
		errors.New("MOVED 3999 10.77.0.2:6379"),
		errors.New("CLUSTERDOWN The cluster is down"),
		&net.OpError{Op: "dial", Err: errors.New("connection refused")},
		errors.New("ERR replication: group 4: linearizable read: not enough for a quorum, cluster: {...}, got: {2}"),
		errors.New("ERR the write's outcome is unknown (timed out waiting for a linearizable read barrier)"),
	} {
		if !notApplied(err) {
			t.Errorf("%v: counted as possibly applied", err)
		}
	}
	for _, err := range []error{
		&net.OpError{Op: "read", Err: timeoutErr{}},
		errors.New("ERR the write's outcome is unknown (timed out waiting for the write to commit)"),
		errors.New("ERR the write's outcome is unknown (it may be applied): the entry was discarded on a leader change (leader now Some(2))"),
		errors.New("ERR replication: group 4: write: something else"),
		errors.New("EOF"),
	} {
		if notApplied(err) {
			t.Errorf("%v: counted as not applied", err)
		}
	}
	// The hook turns an attempt of unknown outcome into an error go-redis does not retry.
	h := attemptHook{}.ProcessHook(func(context.Context, redis.Cmder) error {
		return &net.OpError{Op: "read", Err: timeoutErr{}}
	})
	var u *outcomeUnknown
	if err := h(context.Background(), nil); !errors.As(err, &u) {
		t.Fatalf("got %v", err)
	}
}

func TestWitnesses(t *testing.T) {
	refused := set(1, "x", "z", 20, 30)
	refused.Status = StatusFailed
	for _, c := range []struct {
		name string
		h    []Record
		want string // the start of the pattern's words; "" for none
	}{
		{"stale value", []Record{set(0, "x", "a", 0, 10), set(0, "x", "b", 20, 30), get(1, "x", "a", 40, 50)}, "stale value"},
		{"overlapping writes", []Record{set(0, "x", "a", 0, 10), set(0, "x", "b", 5, 30), get(1, "x", "a", 40, 50)}, ""},
		{"stale absence (DEL)", []Record{set(0, "x", "a", 0, 10), del(1, "x", 0, 20, 30)}, "stale absence"},
		{"stale absence (GET)", []Record{set(0, "x", "a", 0, 10), get(1, "x", "", 20, 30)}, "stale absence"},
		{"absence after a DEL", []Record{set(0, "x", "a", 0, 10), del(2, "x", 1, 12, 14), get(1, "x", "", 20, 30)}, ""},
		{"absence after an unknown DEL", []Record{set(0, "x", "a", 0, 10), del(2, "x", 0, 5, -1), get(1, "x", "", 20, 30)}, ""},
		{"absence while the SET runs", []Record{set(0, "x", "a", 0, 10), get(1, "x", "", 5, 30)}, ""},
		{"future read", []Record{get(1, "x", "a", 0, 10), set(0, "x", "a", 20, 30)}, "read of a SET that began"},
		{"refused write", []Record{refused, get(1, "x", "z", 40, 50)}, "read of a SET the server refused"},
		{"never written", []Record{get(1, "x", "q", 40, 50)}, "read of a value no SET"},
	} {
		ws := witnesses("x", c.h)
		switch {
		case c.want == "" && len(ws) > 0:
			t.Errorf("%s: unexpected witness %s", c.name, describeWitness(ws[0]))
		case c.want != "" && (len(ws) != 1 || !strings.HasPrefix(ws[0].What, c.want)):
			t.Errorf("%s: witnesses %v, want one %q", c.name, ws, c.want)
		}
	}
}

// A witness must only ever be found in a history porcupine calls illegal; and on random
// histories the witnesses must find something, or the test tests nothing.
func TestWitnessesAreSound(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 11))
	found, illegal := 0, 0
	for n := 0; n < 5000; n++ {
		var h []Record
		var written []string
		for i := 0; i < 2+rng.IntN(7); i++ {
			call := int64(rng.IntN(100))
			ret := call + 1 + int64(rng.IntN(30))
			if rng.IntN(5) == 0 {
				ret = -1
			}
			switch rng.IntN(3) {
			case 0:
				if ret < 0 {
					continue
				}
				v := ""
				if len(written) > 0 && rng.IntN(4) > 0 {
					v = written[rng.IntN(len(written))]
				}
				h = append(h, get(i, "x", v, call, ret))
			case 1:
				v := fmt.Sprintf("v%d", i)
				written = append(written, v)
				h = append(h, set(i, "x", v, call, ret))
			case 2:
				h = append(h, del(i, "x", int64(rng.IntN(2)), call, ret))
			}
		}
		ops, _ := operations(h, endOfHistory(h), false)
		legal := porcupine.CheckOperations(registerModel, ops)
		if !legal {
			illegal++
		}
		ws := witnesses("x", h)
		if len(ws) > 0 {
			found++
			if legal {
				t.Fatalf("history %d is linearizable, yet: %s\n%v", n, describeWitness(ws[0]), h)
			}
		}
	}
	if found == 0 {
		t.Fatal("no witness found in any random history")
	}
	t.Logf("%d illegal histories, %d with a witness", illegal, found)
}
