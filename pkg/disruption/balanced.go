package disruption

import (
	"fmt"
	"math"
	"sort"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/podutil"
)

// BalancedK is the Balanced policy's k, as upstream's v1.BalancedK: a move
// passes when the share of its NodePool's cost it saves is at least 1/k of
// the share of the pool's disruption cost it causes.
const BalancedK = 2

// Score is the Balanced policy's judgement of one move for one NodePool,
// as upstream's ScoreResult: the move's savings as a share of the pool's
// cost per hour, and its disruption (the candidates' reschedule costs) as a
// share of the pool's — every node's, candidates or not.
type Score struct {
	Savings, Disruption float64
}

// Value is Savings over Disruption: 0 for no saving, +Inf for a move that
// disrupts nothing.
func (s Score) Value() float64 {
	switch {
	case s.Savings <= 0:
		return 0
	case s.Disruption == 0:
		return math.Inf(1)
	}
	return s.Savings / s.Disruption
}

// Threshold is what Value must reach: 1/BalancedK.
func (Score) Threshold() float64 { return 1.0 / BalancedK }

// Approved: Value reaches Threshold.
func (s Score) Approved() bool { return s.Value() >= s.Threshold() }

// String is the score as upstream's ConsolidationApproved event words it
// (with < for a rejected one).
func (s Score) String() string {
	op := ">="
	if !s.Approved() {
		op = "<"
	}
	return fmt.Sprintf("score %.2f %s threshold %.2f (k: %d, savings %.1f%%, disruption %.1f%%)",
		s.Value(), op, s.Threshold(), BalancedK, s.Savings*100, s.Disruption*100)
}

// Move is one consolidation move a pass judged, for one NodePool of it, as
// upstream counts them (karpenter_consolidation_moves_total and, for a
// Balanced pool, karpenter_consolidation_score): single-node consolidation
// judges every command it finds until one passes, multi-node only its
// search's result — the largest command that passed, or else the last
// that the Balanced policy rejected.
type Move struct {
	Method   Method
	NodePool string
	Policy   v1.ConsolidationPolicy
	// Nodes are the pool's candidates in the move.
	Nodes []string
	// Scored is set for a Balanced pool; Score is then its judgement.
	Scored bool
	Score  Score
	// Approved: the move passed — for a Balanced pool, every Balanced pool
	// of the move approved it; others pass any saving.
	Approved bool
}

// poolTotals are a NodePool's cost per hour and disruption cost, the
// denominators of its Balanced scores.
type poolTotals struct{ cost, disruption float64 }

// totals are the pool's totals, once per pass: the price of all its nodes,
// and the disruption cost of all of them — a candidate's reschedule cost,
// and for any other node its base plus the positive eviction costs of its
// pods but a DaemonSet's, as upstream's state node keeps it.
func (p *pass) totals(pool string) poolTotals {
	if t, ok := p.poolTotals[pool]; ok {
		return t
	}
	var t poolTotals
	for _, cand := range p.byPool[pool] {
		t.cost += cand.Price
		if p.candidates[cand] {
			t.disruption += p.rescheduleCost(cand)
			continue
		}
		t.disruption += baseDisruptionCost
		for _, pod := range cand.Node.Pods {
			if !podutil.IsDaemonSetPod(pod) {
				t.disruption += max(0, evictionCost(pod))
			}
		}
	}
	if p.poolTotals == nil {
		p.poolTotals = map[string]poolTotals{}
	}
	p.poolTotals[pool] = t
	return t
}

// score is the Balanced score of taking the candidates, of pool, for the
// savings; ok is false when the pool has no cost or disruption to measure
// against (upstream then scores 0/0: a zero Score, rejected).
func (p *pass) score(pool string, savings, disruption float64) Score {
	t := p.totals(pool)
	if t.cost <= 0 || t.disruption <= 0 {
		return Score{}
	}
	return Score{Savings: savings / t.cost, Disruption: disruption / t.disruption}
}

// canPass: even deleting the candidate outright — the best any move of it
// can do — passes its pool's Balanced threshold (true for other policies).
// Single-node consolidation skips a candidate that cannot, unsimulated.
func (p *pass) canPass(cand *Candidate) bool {
	if p.pools[cand.NodePool].Spec.Disruption.ConsolidationPolicy != v1.ConsolidationPolicyBalanced {
		return true
	}
	t := p.totals(cand.NodePool)
	if t.cost <= 0 {
		return true
	}
	return p.score(cand.NodePool, cand.Price, p.rescheduleCost(cand)).Approved()
}

// judge scores a consolidation command pool by pool, as upstream's
// EvaluateBalancedMove: each Balanced pool of the command gets its share of
// the savings (by the price of its candidates, when the command spans
// pools) over the disruption of its candidates; the command passes when
// every Balanced pool approves. The moves are in pool-name order.
func (p *pass) judge(cmd *Command) ([]Move, bool) {
	byPool := map[string][]*Candidate{}
	var price float64
	for _, cand := range cmd.Candidates {
		byPool[cand.NodePool] = append(byPool[cand.NodePool], cand)
		price += cand.Price
	}
	pools := make([]string, 0, len(byPool))
	for pool := range byPool {
		pools = append(pools, pool)
	}
	sort.Strings(pools)
	moves := make([]Move, 0, len(pools))
	approved := true
	for _, pool := range pools {
		cands := byPool[pool]
		m := Move{Method: cmd.Method, NodePool: pool, Policy: p.pools[pool].Spec.Disruption.ConsolidationPolicy}
		var poolPrice, disruption float64
		for _, cand := range cands {
			m.Nodes = append(m.Nodes, cand.Node.Name)
			poolPrice += cand.Price
			disruption += p.rescheduleCost(cand)
		}
		if m.Policy == v1.ConsolidationPolicyBalanced {
			savings := cmd.Savings
			if len(pools) > 1 && price > 0 {
				savings *= poolPrice / price
			}
			m.Scored, m.Score = true, p.score(pool, savings, disruption)
			approved = approved && m.Score.Approved()
		}
		moves = append(moves, m)
	}
	for i := range moves {
		moves[i].Approved = approved
	}
	return moves, approved
}

// rejection says why the Balanced policy turned a command down.
func rejection(moves []Move) string {
	for _, m := range moves {
		if m.Scored && !m.Score.Approved() {
			return fmt.Sprintf("the Balanced policy of NodePool %s rejects it: %s", m.NodePool, m.Score)
		}
	}
	return "the Balanced policy rejects it"
}
