// Package autoscale is the simulator's model of what scales workloads: a
// load over time (constant, diurnal, steps, or a CSV of them), the
// HorizontalPodAutoscaler controller's algorithm on a CPU utilization
// target (replica calculator, stabilization, behavior policies), and
// KEDA's queue-length scaler. It decides replica counts only; pkg/sim
// makes and removes the pods.
package autoscale
