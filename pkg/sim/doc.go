// Package sim is Joiner's simulator: it runs the real provisioning,
// disruption and termination code against an in-memory cluster and a
// simulated EC2 on a virtual clock, driven by a loaded scenario
// (pkg/scenario), and reports cost, pod start latency and disruption.
package sim
