package yamlfile

// This file defines the bound on what YAML aliases add to a file, which keeps a small file
// from decoding into a huge value.

import (
	"fmt"

	"go.yaml.in/yaml/v3"
)

// AliasFactor, MinAliasValues and MaxAliasValues bound what YAML aliases add to a file: the
// values that an alias stands for count each time the alias is used, and together they may
// be at most AliasFactor times the values written in the file, but never fewer than
// MinAliasValues nor more than MaxAliasValues. This is the budget of go.yaml.in/yaml/v3's
// decoder (allowedAliasRatio: 99% of what it decodes may come from aliases in a small
// document), which kube-apiserver relies on too, with a ceiling: 100,000 values decode in
// about 20 MiB.
const (
	AliasFactor    = 100
	MinAliasValues = 10_000
	MaxAliasValues = 100_000
)

// aliasBudget returns the number of values aliases may add to a file of n values, and how
// that number came about, for errors.
func aliasBudget(n int, what string) (int, string) {
	switch limit := AliasFactor * n; {
	case limit <= MinAliasValues:
		return MinAliasValues, ""
	case limit >= MaxAliasValues:
		return MaxAliasValues, ""
	default:
		return limit, fmt.Sprintf(" (%d times the %d values written in the %s)", AliasFactor, n, what)
	}
}

// aliasSizes counts the values of YAML node trees, following aliases, without decoding
// them: each count is computed once per node, so that counting takes time in proportion to
// the nodes written, however much the aliases expand. Counts stop growing at a cap above
// MaxAliasValues, and an alias to a node that contains it counts as the cap.
type aliasSizes struct {
	size   map[*yaml.Node]int
	inUse  map[*yaml.Node]bool
	cyclic map[*yaml.Node]bool // the nodes that contain an alias to themselves or a node around them
}

// aliasCap is where counts stop growing: above any budget.
const aliasCap = MaxAliasValues + 1

// expanded returns the number of values of n with its aliases expanded, up to aliasCap.
func (s *aliasSizes) expanded(n *yaml.Node) int {
	if n.Kind == yaml.AliasNode {
		if n.Alias == nil {
			return 1
		}
		return s.expanded(n.Alias)
	}
	if len(n.Content) == 0 {
		return 1
	}
	if size, ok := s.size[n]; ok {
		return size
	}
	if s.inUse[n] {
		s.cyclic[n] = true // an alias inside the value it names
		return aliasCap
	}
	if s.size == nil {
		s.size, s.inUse, s.cyclic = make(map[*yaml.Node]int), make(map[*yaml.Node]bool), make(map[*yaml.Node]bool)
	}
	s.inUse[n] = true
	size := 1
	for _, c := range n.Content {
		size = min(size+s.expanded(c), aliasCap)
		if t := c; t.Kind == yaml.AliasNode && t.Alias != nil && s.cyclic[t.Alias] || s.cyclic[c] {
			s.cyclic[n] = true
		}
	}
	delete(s.inUse, n)
	s.size[n] = size
	return size
}

// countNodes returns the number of nodes written in the tree n, not following aliases.
func countNodes(n *yaml.Node) int {
	count := 1
	for _, c := range n.Content {
		count += countNodes(c)
	}
	return count
}
