// Package spell suggests the nearest of several names for "did you mean" hints, as in
// `unknown field; did you mean "tolerations"?`.
//
// To find the candidate closest to a misspelt name, use [Nearest].
package spell

import (
	"unicode"
)

// MaxLen bounds the length in bytes of the names Nearest compares.
const MaxLen = 128

// Nearest returns the element of candidates nearest to x, or "" if none is close enough.
//
// Names are compared ignoring case and underscores, so "Overlay" matches "overlay" and
// "node_selector" matches "nodeSelector" at distance 0. Otherwise the distance is the
// edit distance between the folded names, a transposition of two adjacent runes counting as one edit, counted in runes, and a candidate is
// close enough when that distance is at most about a third of the length of x
// ((len+1)/3 runes). Ties go to the earlier candidate, so the result is deterministic.
// A candidate equal to x is returned as is.
//
// Names longer than MaxLen bytes are not compared, x or candidate, so that the search costs
// at most about MaxLen² steps a candidate, whatever the names: a hostile name of 100,000
// characters gets no suggestion, in no time.
func Nearest(x string, candidates []string) string {
	if len(x) > MaxLen {
		return ""
	}
	fx := fold(x)
	best := ""
	bestD := (len(fx)+1)/3 + 1 // exclusive bound
	for _, c := range candidates {
		if len(c) > MaxLen {
			continue
		}
		d := distance(fx, fold(c), bestD)
		if d < bestD {
			bestD = d
			best = c
			if d == 0 {
				break
			}
		}
	}
	return best
}

// fold lower-cases s and removes its underscores, returning the runes.
func fold(s string) []rune {
	r := make([]rune, 0, len(s))
	for _, c := range s {
		if c != '_' {
			r = append(r, unicode.ToLower(c))
		}
	}
	return r
}

// distance returns the edit distance between x and y counting insertions, deletions,
// substitutions and transpositions of two adjacent runes ("nmae" is one edit from "name"),
// the optimal string alignment distance. When the distance is at least limit it may return
// early with some value that is also at least limit.
func distance(x, y []rune, limit int) int {
	if len(x) > len(y) {
		x, y = y, x
	}
	// Remove the common prefix and suffix.
	for len(x) > 0 && x[0] == y[0] {
		x, y = x[1:], y[1:]
	}
	for len(x) > 0 && x[len(x)-1] == y[len(y)-1] {
		x, y = x[:len(x)-1], y[:len(y)-1]
	}
	if len(x) == 0 {
		return len(y)
	}
	if len(y)-len(x) >= limit {
		return len(y) - len(x)
	}
	// cur[j] is the distance between the first i runes of x and the first j runes of y;
	// prev and prev2 hold rows i-1 and i-2.
	prev2 := make([]int, len(y)+1)
	prev := make([]int, len(y)+1)
	cur := make([]int, len(y)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(x); i++ {
		cur[0] = i
		best := i
		for j := 1; j <= len(y); j++ {
			cost := 1
			if x[i-1] == y[j-1] {
				cost = 0
			}
			d := min(prev[j-1]+cost, cur[j-1]+1, prev[j]+1)
			if i > 1 && j > 1 && x[i-1] == y[j-2] && x[i-2] == y[j-1] {
				d = min(d, prev2[j-2]+1)
			}
			cur[j] = d
			best = min(best, d)
		}
		if best >= limit {
			return best
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(y)]
}
