// Package report is what a simulation run reports — cost, nodes, pods and
// their start-up, disruptions and what blocked them, the input left out —
// and its writers: the summary a person reads in ten seconds and the
// comparison of two runs. pkg/sim fills a Report (its recorder); the
// commands, pkg/htmlreport, pkg/replay's backtest and pkg/tune read it.
// Its JSON is deterministic: the same scenario and seed give the same
// bytes.
package report
