package main

// The recorded history, as written to history.jsonl and read back by -check, and its
// translation into porcupine's operations.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sort"

	"github.com/anishathalye/porcupine"
)

// Status of a recorded operation.
const (
	StatusOK      = "ok"      // the server answered
	StatusUnknown = "unknown" // a write that may or may not have taken effect
	StatusFailed  = "failed"  // did not take effect: a read that errored, or a write the server refused before proposing it
)

// Record is one operation of the history. Times are nanoseconds since the client started
// (monotonic clock). An unknown write has Return = -1: it never completed.
type Record struct {
	Client  int    `json:"client"`
	Op      string `json:"op"` // get | set | del
	Key     string `json:"key"`
	Value   string `json:"value,omitempty"` // set: the value written; get: the value read ("" = absent)
	Deleted int64  `json:"deleted,omitempty"`
	Status  string `json:"status"`
	Call    int64  `json:"call"`
	Return  int64  `json:"return"`
	Err     string `json:"err,omitempty"`
	Node    string `json:"node,omitempty"`  // where the last attempt went
	Final   bool   `json:"final,omitempty"` // a read of the final phase, after the faults were healed
}

func kindOf(op string) (Kind, error) {
	switch op {
	case "get":
		return Get, nil
	case "set":
		return Set, nil
	case "del":
		return Del, nil
	}
	return 0, fmt.Errorf("unknown op %q", op)
}

func (r Record) isWrite() bool { return r.Op == "set" || r.Op == "del" }

// writeHistory writes one JSON record per line.
func writeHistory(path string, recs []Record) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	enc := json.NewEncoder(w)
	for _, r := range recs {
		if err := enc.Encode(r); err != nil {
			f.Close()
			return err
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// readHistory reads what writeHistory wrote.
func readHistory(path string) ([]Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var recs []Record
	dec := json.NewDecoder(bufio.NewReaderSize(f, 1<<20))
	for dec.More() {
		var r Record
		if err := dec.Decode(&r); err != nil {
			return nil, fmt.Errorf("%s: record %d: %w", path, len(recs)+1, err)
		}
		if _, err := kindOf(r.Op); err != nil {
			return nil, fmt.Errorf("%s: record %d: %w", path, len(recs)+1, err)
		}
		recs = append(recs, r)
	}
	return recs, nil
}

// endOfHistory is a time after every call and return of recs: the Return given to writes
// whose outcome is unknown.
func endOfHistory(recs []Record) int64 {
	var end int64
	for _, r := range recs {
		end = max(end, r.Call, r.Return)
	}
	return end + 1
}

// byKey groups the records of each key, each group sorted by call time.
func byKey(recs []Record) map[string][]Record {
	m := map[string][]Record{}
	for _, r := range recs {
		m[r.Key] = append(m[r.Key], r)
	}
	for _, rs := range m {
		sort.SliceStable(rs, func(i, j int) bool { return rs[i].Call < rs[j].Call })
	}
	return m
}

// operations turns one key's records into porcupine's operations. Failed operations
// are left out (they had no effect and observed nothing); unknown writes end at `end`.
// Writes whose outcome is unknown and that nothing could have observed are left out too
// (see prunable) when prune is set.
func operations(recs []Record, end int64, prune bool) (ops []porcupine.Operation, pruned int) {
	observed := map[string]bool{}
	for _, r := range recs {
		if r.Op == "get" && r.Status == StatusOK && r.Value != "" {
			observed[r.Value] = true
		}
	}
	for _, r := range recs {
		if r.Status == StatusFailed {
			continue
		}
		if prune && prunable(r, recs, observed) {
			pruned++
			continue
		}
		kind, _ := kindOf(r.Op)
		in := Input{Kind: kind, Key: r.Key}
		out := Output{}
		ret := r.Return
		switch kind {
		case Get:
			out.Value = r.Value
		case Set:
			in.Value = r.Value
		case Del:
			out.Deleted = r.Deleted
		}
		if r.Status == StatusUnknown {
			out.Unknown = true
			ret = end
		}
		ops = append(ops, porcupine.Operation{ClientId: r.Client, Input: in, Output: out, Call: r.Call, Return: ret})
	}
	return ops, pruned
}

// prunable: an unknown SET of a value no read returned, with no DEL that may follow it and
// answered anything but 0. Leaving such a write out changes no verdict, and unknown writes
// are what makes the search expensive (each stays open to the end of the history):
//   - if the history without it is linearizable, so is the history with it, placed last
//     (its interval reaches the end);
//   - if the history with it is linearizable, move it to the end of that order: between it
//     and the next write there is no read (a read there returns its value, which no read
//     did); the next write is a SET, legal in any state, or a DEL that never answered
//     (legal in any state), since no DEL that answered 1 may follow it and one that
//     answered 0 cannot follow it in a legal order; then drop it.
//
// Each pruned write leaves the others' conditions as they were, so all are dropped at once.
func prunable(r Record, recs []Record, observed map[string]bool) bool {
	if r.Op != "set" || r.Status != StatusUnknown || observed[r.Value] {
		return false
	}
	for _, u := range recs {
		if u.Op != "del" || u.Status != StatusOK || u.Deleted == 0 {
			continue
		}
		// A DEL that answered 1 and completed after this SET began may have removed it.
		if u.Return >= r.Call {
			return false
		}
	}
	return true
}
