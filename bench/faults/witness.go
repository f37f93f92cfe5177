package main

// Witnesses: small patterns of two or three operations that no linearizable history
// contains, found directly. Porcupine's search proves a key illegal only by exhausting
// every order, and writes of unknown outcome (open to the end of the history) make that
// search exponential: on a long, illegal history it runs out of time or memory. These
// patterns need no search, so a violation of their kind is named whatever porcupine
// manages, with the operations that show it.
//
// Each pattern holds whatever the other operations are (adding operations to the history
// cannot make it legal again), and relies on values being unique to one SET.

import (
	"fmt"
	"sort"
)

// Witness is one proof of a violation on a key.
type Witness struct {
	Key   string
	What  string   // the pattern, in words
	Names []string // what the words call each operation
	Ops   []Record
}

func retOrEnd(r Record) int64 {
	if r.Status == StatusUnknown {
		return 1<<63 - 1
	}
	return r.Return
}

// witnesses looks for the patterns in one key's records:
//   - stale value: a read returns v, written by an acknowledged SET w, though a write u
//     (acknowledged) began after w returned and returned before the read began;
//   - stale absence: a GET finds nothing or a DEL answers 0, though an acknowledged SET u
//     returned before it began and no DEL (acknowledged or unknown) can fall between u's
//     start and its end;
//   - read from the future: a read returns a value whose SET began after the read returned;
//   - read of a refused write: a read returns the value of a SET the server refused
//     (MOVED, CLUSTERDOWN: nothing proposed);
//   - read of a value never written.
func witnesses(key string, recs []Record) []Witness {
	var out []Witness
	setOf := map[string]Record{}
	var acked, dels []Record
	for _, r := range recs {
		if r.Op == "set" {
			setOf[r.Value] = r
		}
		if r.isWrite() && r.Status == StatusOK {
			acked = append(acked, r)
		}
		if r.Op == "del" && r.Status != StatusFailed {
			dels = append(dels, r)
		}
	}
	// Acknowledged writes by call, with the earliest return among those from each on: the
	// first write that began after time t and returned earliest.
	sort.Slice(acked, func(i, j int) bool { return acked[i].Call < acked[j].Call })
	minRet := make([]int, len(acked))
	for i := len(acked) - 1; i >= 0; i-- {
		minRet[i] = i
		if i+1 < len(acked) && acked[minRet[i+1]].Return < acked[i].Return {
			minRet[i] = minRet[i+1]
		}
	}
	firstAfter := func(t int64) (Record, bool) {
		i := sort.Search(len(acked), func(i int) bool { return acked[i].Call > t })
		if i == len(acked) {
			return Record{}, false
		}
		return acked[minRet[i]], true
	}
	// Acknowledged SETs by return, with the latest call among those up to each: the SET that
	// returned before time t and began last.
	var sets []Record
	for _, r := range acked {
		if r.Op == "set" {
			sets = append(sets, r)
		}
	}
	sort.Slice(sets, func(i, j int) bool { return sets[i].Return < sets[j].Return })
	maxCall := make([]int, len(sets))
	for i := range sets {
		maxCall[i] = i
		if i > 0 && sets[maxCall[i-1]].Call > sets[i].Call {
			maxCall[i] = maxCall[i-1]
		}
	}
	lastSetBefore := func(t int64) (Record, bool) {
		i := sort.Search(len(sets), func(i int) bool { return sets[i].Return >= t })
		if i == 0 {
			return Record{}, false
		}
		return sets[maxCall[i-1]], true
	}

	for _, o := range recs {
		if o.Status != StatusOK {
			continue
		}
		switch {
		case o.Op == "get" && o.Value != "":
			w, ok := setOf[o.Value]
			switch {
			case !ok:
				out = append(out, Witness{key, "read of a value no SET wrote", []string{"read"}, []Record{o}})
			case w.Status == StatusFailed:
				out = append(out, Witness{key, "read of a SET the server refused", []string{"read", "SET"}, []Record{o, w}})
			case o.Return < w.Call:
				out = append(out, Witness{key, "read of a SET that began after the read returned", []string{"read", "SET"}, []Record{o, w}})
			case w.Status == StatusOK:
				if u, ok := firstAfter(w.Return); ok && u.Return < o.Call {
					out = append(out, Witness{key, "stale value: the read returns w's value though u began after w returned and returned before the read began", []string{"read", "w", "u"}, []Record{o, w, u}})
				}
			}
		case (o.Op == "get" && o.Value == "") || (o.Op == "del" && o.Deleted == 0):
			u, ok := lastSetBefore(o.Call)
			if !ok {
				continue
			}
			between := false
			for _, d := range dels {
				if d.Call == o.Call && d.Client == o.Client {
					continue // o itself
				}
				if d.Call <= o.Return && retOrEnd(d) >= u.Call {
					between = true
					break
				}
			}
			if !between {
				out = append(out, Witness{key, "stale absence: the key reads as absent though the SET u returned before and no DEL can fall between them", []string{"read", "u"}, []Record{o, u}})
			}
		}
	}
	return out
}

func describeWitness(w Witness) string {
	s := fmt.Sprintf("key %s: %s", w.Key, w.What)
	for i, r := range w.Ops {
		s += fmt.Sprintf("\n    %-5s %s", w.Names[i]+":", describeRecord(r))
	}
	return s
}
