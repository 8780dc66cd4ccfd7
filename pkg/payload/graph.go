package payload

import (
	"fmt"
	"regexp"
	"strings"
)

// reRunLevel matches 0000_<NN>_<component>_<rest>; the component is alphanumerics joined by dashes.
var reRunLevel = regexp.MustCompile(`^0000_(\d+)_([a-zA-Z0-9]+(?:-[a-zA-Z0-9]+)*)_`)

// ParseRunLevel returns the run level (NN, as written) and component of a file name, and whether the
// name follows the 0000_<NN>_<component>_<rest> pattern.
func ParseRunLevel(filename string) (level, component string, ok bool) {
	m := reRunLevel.FindStringSubmatch(filename)
	if m == nil {
		return "", "", false
	}
	return m[1], m[2], true
}

// Node is a serial chain of tasks: the manifests of one (run level, component), or of one file that
// does not follow the naming pattern. A failed task stops the rest of its node.
type Node struct {
	ID int
	// RunLevel is NN as written ("" for files not following the pattern).
	RunLevel string
	// Component is the component of the pattern ("" for files not following it).
	Component string
	Manifests []*Manifest
}

// Name is "<NN>_<component>", or the file name for files not following the pattern.
func (n *Node) Name() string {
	if n.RunLevel == "" {
		if len(n.Manifests) > 0 {
			return n.Manifests[0].Filename
		}
		return fmt.Sprintf("node-%d", n.ID)
	}
	return n.RunLevel + "_" + n.Component
}

// Stage is a set of nodes run in parallel; every stage is a barrier for the next one: a stage starts
// only when all nodes of the previous stages succeeded.
type Stage struct {
	// RunLevel is NN for a run-level stage, "" for a stage holding one non-pattern file.
	RunLevel string
	Nodes    []*Node
}

// Graph is the CVO's ordered task graph (the "by number and component" ordering used for updates):
// consecutive files of one run level form a stage, one node per component (serial within, parallel
// across components); each file not following the pattern is a serial stage of its own.
type Graph struct {
	Stages []*Stage
}

// BuildGraph orders manifests (already in filename order) into a Graph.
func BuildGraph(manifests []*Manifest) *Graph {
	g := &Graph{}
	var cur *Stage
	byComponent := map[string]*Node{}
	nextID := 0
	newNode := func(level, component string) *Node {
		n := &Node{ID: nextID, RunLevel: level, Component: component}
		nextID++
		return n
	}
	var lastLoose string // file name of the current non-pattern stage
	for _, m := range manifests {
		level, component, ok := ParseRunLevel(m.Filename)
		if !ok {
			if cur != nil && cur.RunLevel == "" && lastLoose == m.Filename {
				cur.Nodes[0].Manifests = append(cur.Nodes[0].Manifests, m)
				continue
			}
			n := newNode("", "")
			n.Manifests = []*Manifest{m}
			cur = &Stage{Nodes: []*Node{n}}
			g.Stages = append(g.Stages, cur)
			lastLoose = m.Filename
			continue
		}
		lastLoose = ""
		if cur == nil || cur.RunLevel != level {
			cur = &Stage{RunLevel: level}
			g.Stages = append(g.Stages, cur)
			byComponent = map[string]*Node{}
		}
		n, found := byComponent[component]
		if !found {
			n = newNode(level, component)
			byComponent[component] = n
			cur.Nodes = append(cur.Nodes, n)
		}
		n.Manifests = append(n.Manifests, m)
	}
	return g
}

// Nodes returns all nodes in order.
func (g *Graph) Nodes() []*Node {
	var out []*Node
	for _, s := range g.Stages {
		out = append(out, s.Nodes...)
	}
	return out
}

// String renders the graph one stage per line: `10: [a: f1, f2] [b: f3]`.
func (g *Graph) String() string {
	var lines []string
	for _, s := range g.Stages {
		label := s.RunLevel
		if label == "" {
			label = "-"
		}
		var nodes []string
		for _, n := range s.Nodes {
			var files []string
			for _, m := range n.Manifests {
				files = append(files, m.Ref())
			}
			nodes = append(nodes, fmt.Sprintf("[%s: %s]", n.Name(), strings.Join(files, ", ")))
		}
		lines = append(lines, label+": "+strings.Join(nodes, " "))
	}
	return strings.Join(lines, "\n")
}
