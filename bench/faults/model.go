package main

// The sequential specification the history is checked against: one register per key,
// holding a value or nothing (absent). Values are never empty, so "" stands for absent.

import (
	"fmt"
	"hash/fnv"

	"github.com/anishathalye/porcupine"
)

// Kind is what an operation does to its key.
type Kind uint8

const (
	Get Kind = iota
	Set
	Del
)

func (k Kind) String() string {
	switch k {
	case Get:
		return "get"
	case Set:
		return "set"
	case Del:
		return "del"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Input is an operation as invoked.
type Input struct {
	Kind  Kind
	Key   string
	Value string // Set only
}

// Output is what the server answered.
type Output struct {
	Value   string // Get: the value read, "" when the key was absent
	Deleted int64  // Del: keys removed (0 or 1)
	// Unknown: the write's outcome is unknown (an error or timeout after it may have
	// reached the server). Its Return is the end of the history, so the checker may place
	// it anywhere after its call, including after everything else (never taking effect).
	Unknown bool
}

// registerModel is porcupine's model of the store: partitioned by key, each partition a
// single register. Step must not mutate its arguments (porcupine's requirement); strings
// are immutable, so returning them is enough.
var registerModel = porcupine.Model{
	Partition: partitionByKey,
	Init:      func() interface{} { return "" },
	Step: func(state, input, output interface{}) (bool, interface{}) {
		st := state.(string)
		in := input.(Input)
		out := output.(Output)
		switch in.Kind {
		case Get:
			return out.Value == st, st
		case Set:
			return true, in.Value
		case Del:
			if out.Unknown {
				return true, ""
			}
			existed := st != ""
			return existed == (out.Deleted == 1), ""
		}
		return false, st
	},
	Equal: func(a, b interface{}) bool { return a.(string) == b.(string) },
	Hash: func(state interface{}) uint64 {
		h := fnv.New64a()
		h.Write([]byte(state.(string)))
		return h.Sum64()
	},
	DescribeOperation: func(input, output interface{}) string {
		in := input.(Input)
		out := output.(Output)
		switch in.Kind {
		case Get:
			return fmt.Sprintf("get %s -> %s", in.Key, showValue(out.Value))
		case Set:
			if out.Unknown {
				return fmt.Sprintf("set %s %s (outcome unknown)", in.Key, in.Value)
			}
			return fmt.Sprintf("set %s %s", in.Key, in.Value)
		case Del:
			if out.Unknown {
				return fmt.Sprintf("del %s (outcome unknown)", in.Key)
			}
			return fmt.Sprintf("del %s -> %d", in.Key, out.Deleted)
		}
		return "?"
	},
	DescribeState: func(state interface{}) string { return showValue(state.(string)) },
}

func showValue(v string) string {
	if v == "" {
		return "(absent)"
	}
	return v
}

// partitionByKey splits a history into one history per key, each in its original order:
// registers of different keys are independent, so the whole history is linearizable iff
// every key's is.
func partitionByKey(history []porcupine.Operation) [][]porcupine.Operation {
	index := map[string]int{}
	var parts [][]porcupine.Operation
	for _, op := range history {
		k := op.Input.(Input).Key
		i, ok := index[k]
		if !ok {
			i = len(parts)
			index[k] = i
			parts = append(parts, nil)
		}
		parts[i] = append(parts[i], op)
	}
	return parts
}
