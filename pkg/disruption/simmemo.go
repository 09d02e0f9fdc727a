package disruption

import (
	"crypto/sha256"
	"hash"
	"slices"
	"strconv"

	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
)

// A scheduling simulation's answer depends only on what it is given: the
// planner (NodePools, instance types and their offerings, DaemonSets), the
// nodes that stay with their pods and whether they are being disrupted,
// the pending pods, and which candidates go. None of it depends on the
// clock. A cluster at rest asks the same questions pass after pass — most
// passes of a simulated week see exactly the cluster of the pass before —
// so the Memo keeps the answers, keyed by all of that content.

// simScope is what every simulation of a pass shares: the planner (held by
// the key, so its address is not reused while the entry lives; a Planner
// never changes what it was prepared from), the policy and the digest of
// the cluster it runs over. Within a scope, the candidates that go tell
// one simulation from another.
type simScope struct {
	planner *provisioning.Planner
	policy  provisioning.Policy
	world   [sha256.Size]byte
}

// maxSimScopes is how many scopes the Memo keeps answers for, the newest:
// a cluster at rest repeats the last one, and a cluster that changes makes
// a new one every pass, whose answers no later pass asks for. Older
// scopes, and the Planners, pods and nodes their answers hold, are let go:
// an answer holds its pass's nodes, and with them every pod on them, so
// each scope kept is a cluster's pods kept (at four, a 5,000-pod scale-in,
// a new cluster every pass, held its pods' old versions several times
// over).
const maxSimScopes = 2

// maxSimsPerScope bounds one scope's answers.
const maxSimsPerScope = 1 << 12

type simAnswer struct {
	res *provisioning.Results
	ok  bool
}

// simWorld digests what every simulation of the pass shares — each node's
// name, Version and disruption state in order, each unmanaged node, each
// pending pod's content key, whether pending pods are placed, the pods'
// volumes; false when
// some object has no content key (its answers are not remembered).
func (p *pass) simWorld() ([sha256.Size]byte, bool) {
	if p.worldDone {
		return p.world, p.worldOK
	}
	p.worldDone = true
	h := sha256.New()
	field := func(h hash.Hash, s string) {
		h.Write([]byte(strconv.Itoa(len(s))))
		h.Write([]byte{':'})
		h.Write([]byte(s))
	}
	node := func(n *provisioning.Node, flags string) bool {
		field(h, n.Name)
		field(h, n.Version)
		field(h, flags)
		return n.Version != ""
	}
	field(h, strconv.FormatBool(p.withoutPending))
	field(h, p.c.Volumes.Key())
	if p.c.Policy.ModelDRA {
		field(h, p.c.DRA.Key())
	}
	for _, cand := range p.c.Nodes {
		flags := strconv.FormatBool(cand.Disrupting) + strconv.FormatBool(cand.Node.MarkedForDeletion) + strconv.FormatBool(p.closedToMoves(cand))
		if !node(cand.Node, flags) {
			return p.world, false
		}
	}
	field(h, "unmanaged")
	for _, n := range p.c.Unmanaged {
		if !node(n, "") {
			return p.world, false
		}
	}
	field(h, "pending")
	for _, pod := range p.c.Pending {
		if pod.ResourceVersion == "" {
			return p.world, false
		}
		field(h, pod.Namespace)
		field(h, pod.Name)
		field(h, pod.ResourceVersion)
	}
	copy(p.world[:], h.Sum(nil))
	p.worldOK = true
	return p.world, true
}

// simKind is what a simulation is for: it decides where the moved pods
// may go, and keys the remembered answers apart.
type simKind string

const (
	// forDisruption: drift, expiration, emptiness — anywhere they fit.
	forDisruption simKind = ""
	// forConsolidation: the moved pods (but pending ones) may not land on
	// a node closedToMoves.
	forConsolidation simKind = "consolidation"
)

// simulation returns the remembered answer of a simulation, or runs it and
// remembers it (when the cluster's Planner and Memo are set, every object
// has a content key, and the run was not cut short by ctx).
func (p *pass) simulation(kind simKind, cands []*Candidate, run func() (*provisioning.Results, bool, bool)) (*provisioning.Results, bool) {
	m := p.c.Memo
	world, keyed := p.simWorld()
	if m == nil || p.c.Planner == nil || !keyed || len(p.batch) > 0 {
		// (A simulation beside batched commands is the pass's own.)
		res, ok, _ := run()
		return res, ok
	}
	scope := simScope{planner: p.c.Planner, policy: p.c.Policy, world: world}
	k := string(kind) + "|"
	for _, cand := range cands {
		k += strconv.Itoa(len(cand.Node.Name)) + ":" + cand.Node.Name
	}
	m.mu.Lock()
	a, found := m.simulations[scope][k]
	m.mu.Unlock()
	if found {
		return a.res, a.ok
	}
	res, ok, complete := run()
	if complete {
		m.remember(scope, k, simAnswer{res, ok})
	}
	return res, ok
}

// remember keeps an answer in its scope, making the scope the newest.
func (m *Memo) remember(scope simScope, k string, a simAnswer) {
	m.mu.Lock()
	defer m.mu.Unlock()
	answers := m.simulations[scope]
	if answers == nil || len(answers) >= maxSimsPerScope {
		answers = map[string]simAnswer{}
		m.simulations[scope] = answers
	}
	if i := slices.Index(m.scopes, scope); i >= 0 {
		m.scopes = slices.Delete(m.scopes, i, i+1)
	}
	m.scopes = append(m.scopes, scope)
	for len(m.scopes) > maxSimScopes {
		delete(m.simulations, m.scopes[0])
		m.scopes = m.scopes[1:]
	}
	answers[k] = a
}

// ForgetSimulations lets go of every remembered simulation — what a host
// does when it replaces its Planner, whose answers no pass asks for again.
func (m *Memo) ForgetSimulations() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.simulations, m.scopes = map[simScope]map[string]simAnswer{}, nil
}
