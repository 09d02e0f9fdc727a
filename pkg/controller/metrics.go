package controller

import (
	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Metrics under upstream Karpenter's names, where the meaning is the same,
// so its dashboards and alerts keep working. They are registered with
// controller-runtime's registry and served on the manager's /metrics.
var (
	nodeClaimsCreated = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "karpenter", Subsystem: "nodeclaims", Name: "created_total",
		Help: "NodeClaims created, by NodePool and reason (provisioning, or the disruption that replaced a node).",
	}, []string{"nodepool", "reason"})
	nodeClaimsTerminated = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "karpenter", Subsystem: "nodeclaims", Name: "terminated_total",
		Help: "NodeClaims whose instance and Node were removed, by NodePool.",
	}, []string{"nodepool"})
	cloudProviderErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "karpenter", Subsystem: "cloudprovider", Name: "errors_total",
		Help: "Errors the cloud provider returned, by method, provider and error kind.",
	}, []string{"controller", "method", "provider", "error"})
	podStartup = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: "karpenter", Subsystem: "pods", Name: "startup_duration_seconds",
		Help:    "Time from a pod's creation to its Running, for pods Joiner saw pending.",
		Buckets: []float64{1, 5, 10, 20, 30, 45, 60, 90, 120, 180, 300, 600},
	})
	nodePoolUsage = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "karpenter", Subsystem: "nodepools", Name: "usage",
		Help: "The summed capacity of a NodePool's nodes, by resource.",
	}, []string{"nodepool", "resource_type"})
	nodePoolLimit = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "karpenter", Subsystem: "nodepools", Name: "limit",
		Help: "A NodePool's spec.limits, by resource.",
	}, []string{"nodepool", "resource_type"})
	allowedDisruptions = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "karpenter", Subsystem: "nodepools", Name: "allowed_disruptions",
		Help: "How many of a NodePool's nodes its budgets allow to be disrupted now, by reason (-1: unbounded).",
	}, []string{"nodepool", "reason"})
	disruptionDecisions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "karpenter", Subsystem: "voluntary_disruption", Name: "decisions_total",
		Help: "Disruption commands carried out, by decision (delete or replace), reason and method.",
	}, []string{"decision", "reason", "consolidation_type"})
)

func init() {
	crmetrics.Registry.MustRegister(nodeClaimsCreated, nodeClaimsTerminated, cloudProviderErrors, podStartup, disruptionDecisions,
		nodePoolUsage, nodePoolLimit, allowedDisruptions)
}

// errorKind names an error for the errors metric as upstream does.
func errorKind(err error) string {
	switch {
	case isInsufficientCapacity(err):
		return "InsufficientCapacityError"
	case isNotFound(err):
		return "NodeClaimNotFoundError"
	}
	return "error"
}
