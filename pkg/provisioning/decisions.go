package provisioning

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
)

// Decisions names whose choices provisioning makes where Joiner and
// upstream Karpenter deliberately differ.
type Decisions string

const (
	// DecisionsJoiner (the default, also "") plans a batch Joiner's way —
	// pods that need a node of their own first, then largest first, each
	// on the first node or claim that takes it — and upstream's way, and
	// keeps the better plan: never dearer than upstream on the same batch.
	// A static NodePool's scale-down stays within its disruption budgets
	// (see disruption.StaticScale).
	DecisionsJoiner Decisions = "joiner"
	// DecisionsKarpenter makes upstream's choices only, to predict what
	// Karpenter will do: pods in upstream's order (cpu, then memory, then
	// creation), existing nodes initialized first then by name, and among
	// the claims planned so far the one with the fewest pods first. A
	// static NodePool's scale-down bypasses its budgets, as upstream's.
	DecisionsKarpenter Decisions = "karpenter"
)

// DecisionsValues are the names ParseDecisions accepts, for flag help.
var DecisionsValues = []Decisions{DecisionsJoiner, DecisionsKarpenter}

// ParseDecisions reads a --decisions value ("" is the default).
func ParseDecisions(s string) (Decisions, error) {
	switch Decisions(s) {
	case "", DecisionsJoiner:
		return DecisionsJoiner, nil
	case DecisionsKarpenter:
		return DecisionsKarpenter, nil
	}
	return "", fmt.Errorf("unknown decisions %q: want %q (the default: Joiner's choices, never dearer than Karpenter's) or %q (Karpenter's choices, to predict it)", s, DecisionsJoiner, DecisionsKarpenter)
}

// MinValuesPolicy is upstream's operator option of that name.
type MinValuesPolicy string

const (
	// MinValuesStrict (the default, also ""): a claim keeps every minValues.
	MinValuesStrict MinValuesPolicy = "Strict"
	// MinValuesBestEffort lowers a minValues the types that fit cannot meet.
	MinValuesBestEffort MinValuesPolicy = "BestEffort"
)

// ParseMinValuesPolicy reads a --min-values-policy value ("" is Strict).
func ParseMinValuesPolicy(s string) (MinValuesPolicy, error) {
	switch MinValuesPolicy(s) {
	case "", MinValuesStrict:
		return MinValuesStrict, nil
	case MinValuesBestEffort:
		return MinValuesBestEffort, nil
	}
	return "", fmt.Errorf("unknown minValues policy %q: want %q (the default) or %q", s, MinValuesStrict, MinValuesBestEffort)
}

// joinerPodOrder: pods that need a node of their own first (see
// needsOwnNode), then by cpu, then memory, largest first; the rest as given.
func joinerPodOrder(pods []*corev1.Pod, classOf map[*corev1.Pod]*podClass) func(i, j int) bool {
	return func(i, j int) bool {
		ci, cj := classOf[pods[i]], classOf[pods[j]]
		if ci.ownNode != cj.ownNode {
			return ci.ownNode
		}
		a, b := ci.requests, cj.requests
		if a.get(0) != b.get(0) {
			return a.get(0) > b.get(0)
		}
		return a.get(1) > b.get(1)
	}
}

// podOrder is the order Joiner's way offers a batch's pods in.
type podOrder int

const (
	// largestFirst is joinerPodOrder.
	largestFirst podOrder = iota
	// mixed is mixedPodOrder.
	mixed
)

// mixedPodOrder is pods, in joinerPodOrder, with the pods that need no
// node of their own interleaved by size: each size's pods spread evenly
// over the order (the i-th of n at (i+½)/n of the way; ties: the larger
// size first), each size's own pods in the order given.
//
// Largest first fills each new claim with one size of pod until a
// resource runs out: a claim of pods that ask two GiB a core on a type
// with 1.8 is full of memory with a tenth of its cores idle, and the cores
// of every such claim stay idle — the small pods that would use them come
// last and open claims of their own. Mixed, the claims take the batch's
// sizes in its proportions and fill in every resource at once
// (TestMixedOrderFillsEveryResource: a whole node fewer).
func mixedPodOrder(pods []*corev1.Pod, classOf map[*corev1.Pod]*podClass) []*corev1.Pod {
	type sized struct {
		pod     *corev1.Pod
		size, i int // the size's index by first appearance; the pod's among its size
	}
	out := make([]*corev1.Pod, 0, len(pods))
	sizes := map[string]int{}
	var counts []int
	var rest []sized
	for _, pod := range pods {
		c := classOf[pod]
		if c.ownNode {
			out = append(out, pod)
			continue
		}
		k := c.requests.key()
		at, ok := sizes[k]
		if !ok {
			at = len(counts)
			sizes[k] = at
			counts = append(counts, 0)
		}
		rest = append(rest, sized{pod, at, counts[at]})
		counts[at]++
	}
	// (2i+1)/2n against (2j+1)/2m, in integers.
	sort.SliceStable(rest, func(a, b int) bool {
		x, y := rest[a], rest[b]
		l := int64(2*x.i+1) * int64(counts[y.size])
		r := int64(2*y.i+1) * int64(counts[x.size])
		if l != r {
			return l < r
		}
		return x.size < y.size
	})
	for _, p := range rest {
		out = append(out, p.pod)
	}
	return out
}

// mixable: the pods that need no node of their own come in more than one
// size, so mixedPodOrder differs from largest first.
func mixable(pods []*corev1.Pod, classOf map[*corev1.Pod]*podClass) bool {
	first, seen := "", false
	for _, pod := range pods {
		c := classOf[pod]
		if c.ownNode {
			continue
		}
		switch k := c.requests.key(); {
		case !seen:
			first, seen = k, true
		case k != first:
			return true
		}
	}
	return false
}

// upstreamPodOrder is upstream's queue order: cpu, then memory, largest
// first, then older pods first, then by UID.
func upstreamPodOrder(pods []*corev1.Pod, classOf map[*corev1.Pod]*podClass) func(i, j int) bool {
	return func(i, j int) bool {
		a, b := classOf[pods[i]].requests, classOf[pods[j]].requests
		if a.get(0) != b.get(0) {
			return a.get(0) > b.get(0)
		}
		if a.get(1) != b.get(1) {
			return a.get(1) > b.get(1)
		}
		ti, tj := pods[i].CreationTimestamp, pods[j].CreationTimestamp
		if !ti.Equal(&tj) {
			return ti.Before(&tj)
		}
		return pods[i].UID < pods[j].UID
	}
}

// upstreamNodeOrder is the order upstream tries existing nodes in:
// initialized ones (here: registered, not in flight) first, then by name.
func upstreamNodeOrder(nodes []*Node) []*Node {
	out := append([]*Node(nil), nodes...)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].InFlight != out[j].InFlight {
			return !out[i].InFlight
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// placeUpstream offers the pod to the claims planned so far with the
// fewest pods first (ties: the older claim), as upstream does.
func (s *scheduler) placeUpstream(c *podClass, pod *corev1.Pod) bool {
	base := len(s.existing)
	c.rejected.grow(base + len(s.claims))
	for at, ci := range s.byPods {
		if c.rejected.has(base + ci) {
			continue
		}
		permanent, err := s.claims[ci].tryAdd(s, c, pod)
		if err == nil {
			s.reorderClaim(at)
			return true
		}
		s.reject(c, base+ci, err, permanent)
	}
	return false
}

// reorderClaim moves the claim at byPods[at], which just took a pod, to
// its place among the claims with as many pods.
func (s *scheduler) reorderClaim(at int) {
	ci := s.byPods[at]
	n := len(s.claims[ci].pods)
	j := at
	for j+1 < len(s.byPods) {
		next := s.byPods[j+1]
		if m := len(s.claims[next].pods); m > n || m == n && next > ci {
			break
		}
		s.byPods[j] = next
		j++
	}
	s.byPods[j] = ci
}

// addClaimUpstream puts a new claim (one pod) into byPods.
func (s *scheduler) addClaimUpstream(ci int) {
	at := sort.Search(len(s.byPods), func(k int) bool { return len(s.claims[s.byPods[k]].pods) > 1 })
	s.byPods = append(s.byPods, 0)
	copy(s.byPods[at+1:], s.byPods[at:])
	s.byPods[at] = ci
}
