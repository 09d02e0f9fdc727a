package controller

import (
	"context"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/disruption"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
	"github.com/joiner-autoscaler/joiner/pkg/state"
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
		Help: "Disruption commands carried out, by decision (delete or replace), reason and consolidation type (empty, single, multi; \"\" for drift).",
	}, []string{"decision", "reason", "consolidation_type"})
	nodeClaimsDisrupted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "karpenter", Subsystem: "nodeclaims", Name: "disrupted_total",
		Help: "NodeClaims Joiner deleted to disrupt them, by NodePool, reason (underutilized, empty, drifted, expired, insufficient_capacity, liveness, unhealthy, spot_interruption), capacity type, consolidation policy (of a consolidation's NodePool, else \"\") and termination mode (graceful, eventual, forceful: by the claim's terminationGracePeriod).",
	}, disruptedLabels)
	podsDisruptionInitiated = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "karpenter", Subsystem: "pods", Name: "disruption_initiated_total",
		Help: "Pods that had to move because Joiner disrupted their node (the node's reschedulable pods when its NodeClaim was deleted; no DaemonSet or mirror pods), labelled as karpenter_nodeclaims_disrupted_total.",
	}, disruptedLabels)
	nodePoolCostTotal = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "karpenter", Subsystem: "nodepools", Name: "cost_total",
		Help: "What a NodePool's nodes cost per hour now, at their offerings' prices (NodeOverlay prices included); not a bill.",
	}, []string{"nodepool"})
	consolidationScore = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "karpenter", Name: "consolidation_score",
		Help:    "The Balanced policy's scores of consolidation moves, by decision (approved, rejected), NodePool and policy.",
		Buckets: []float64{0.1, 0.25, 0.33, 0.5, 1, 2, 5, 10},
	}, []string{"decision", "nodepool", "policy"})
	consolidationMoves = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "karpenter", Name: "consolidation_moves_total",
		Help: "Consolidation moves judged, by decision (approved, rejected), NodePool and policy: each command single-node consolidation found, and multi-node consolidation's result.",
	}, []string{"decision", "nodepool", "policy"})
	cloudProviderDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "karpenter", Subsystem: "cloudprovider", Name: "duration_seconds",
		Help:    "How long cloud provider calls took, by calling controller, method and provider.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
	}, []string{"controller", "method", "provider"})
	schedulingDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "karpenter", Subsystem: "scheduler", Name: "scheduling_duration_seconds",
		Help:    "How long a provisioning pass's scheduling simulation took.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
	}, []string{"controller"})
	schedulingQueueDepth = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "karpenter", Subsystem: "scheduler", Name: "queue_depth",
		Help: "The pods the last provisioning pass was to find room for (pending, unschedulable by kube-scheduler).",
	}, []string{"controller"})
	nodePodRequests = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "karpenter", Subsystem: "nodes", Name: "total_pod_requests",
		Help: "The summed requests of the pods bound to a node, by resource.",
	}, []string{"node_name", "nodepool", "resource_type"})
	nodePoolCost = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "joiner", Subsystem: "nodepool", Name: "cost_per_hour_usd",
		Help: "What a NodePool's nodes cost per hour now, at their offerings' current prices (USD).",
	}, []string{"nodepool"})
	podsGivenUp = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "joiner", Subsystem: "provisioner", Name: "pods_given_up_total",
		Help: "Pods the launch-loop guard stopped launching nodes for: each missed three ready nodes launched for it.",
	})
)

func init() {
	crmetrics.Registry.MustRegister(nodeClaimsCreated, nodeClaimsTerminated, cloudProviderErrors, podStartup, disruptionDecisions,
		nodePoolUsage, nodePoolLimit, allowedDisruptions, nodeClaimsDisrupted, cloudProviderDuration, schedulingDuration,
		nodePodRequests, nodePoolCost, schedulingQueueDepth, podsGivenUp, podsDisruptionInitiated, nodePoolCostTotal,
		consolidationScore, consolidationMoves)
}

// disruptedLabels label karpenter_nodeclaims_disrupted_total and
// karpenter_pods_disruption_initiated_total, as upstream's.
var disruptedLabels = []string{"nodepool", "reason", "capacity_type", "consolidation_policy", "termination_mode"}

// countDisrupted counts a NodeClaim deleted to disrupt it and, unless pods
// is negative (a claim that never ran any: upstream counts none), the pods
// that must move because of it. policy is the consolidation policy of a
// consolidation's NodePool, "" for any other reason.
func countDisrupted(nc *v1.NodeClaim, reason string, policy v1.ConsolidationPolicy, pods int) {
	labels := prometheus.Labels{"nodepool": nc.Labels[v1.LabelNodePool], "reason": reason, "capacity_type": nc.Labels[v1.LabelCapacityType],
		"consolidation_policy": snakeCase(string(policy)), "termination_mode": terminationMode(nc)}
	nodeClaimsDisrupted.With(labels).Inc()
	if pods >= 0 {
		podsDisruptionInitiated.With(labels).Add(float64(pods))
	}
}

// terminationMode is how the claim's node will be drained, as upstream
// labels it: graceful without a terminationGracePeriod, forceful with one
// of zero, eventual otherwise.
func terminationMode(nc *v1.NodeClaim) string {
	switch g := nc.Spec.TerminationGracePeriod; {
	case g == nil:
		return "graceful"
	case g.Duration <= 0:
		return "forceful"
	}
	return "eventual"
}

// snakeCase writes a reason as upstream's metrics label it: Underutilized
// → underutilized, InsufficientCapacity → insufficient_capacity.
func snakeCase(s string) string {
	var b strings.Builder
	for i, r := range s {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// consolidationType is the consolidation_type label of a method, as
// upstream's: empty, single, multi, and "" for the others.
func consolidationType(m disruption.Method) string {
	switch m {
	case disruption.MethodEmpty:
		return "empty"
	case disruption.MethodSingleNode:
		return "single"
	case disruption.MethodMultiNode:
		return "multi"
	}
	return ""
}

// metricsEvery is how often the gauges of nodes and NodePools are set
// from the Store.
const metricsEvery = 10 * time.Second

// metricsUpdater sets the gauges of nodes and NodePools from the Store.
type metricsUpdater struct {
	gate  *syncGate
	store *state.Store
	clock clock.WithTicker

	// mu guards which series update set last, to drop those of nodes and
	// NodePools that are gone (a Reset would leave a scrape in between
	// with none at all).
	mu       sync.Mutex
	requests map[[3]string]bool
	cost     map[string]bool
}

// loop keeps the gauges until ctx ends.
func (m *metricsUpdater) loop(ctx context.Context) error {
	return every(ctx, m.gate, m.clock, metricsEvery, "updating metrics", func(context.Context) error {
		m.update()
		return nil
	})
}

// update is Controller.UpdateGauges.
func (m *metricsUpdater) update() {
	dc := m.store.DisruptionSnapshot(m.clock.Now(), nil)
	requests, cost := map[[3]string]float64{}, map[string]float64{}
	for _, np := range dc.NodePools {
		cost[np.Name] = 0
	}
	addRequests := func(n *provisioning.Node) {
		requested := n.Requested // the Store's sum of its pods' requests
		if requested == nil {
			var reqs []corev1.ResourceList
			for _, p := range n.Pods {
				reqs = append(reqs, scheduling.PodRequests(p))
			}
			requested = scheduling.Add(reqs...)
		}
		for name, q := range requested {
			requests[[3]string{n.Name, n.NodePool, string(name)}] = q.AsApproximateFloat64()
		}
	}
	for _, cand := range dc.Nodes {
		if cand.Node.InFlight {
			continue // no pods yet, and no instance to pay for until it launches
		}
		addRequests(cand.Node)
		cost[cand.NodePool] += cand.Price
	}
	for _, n := range dc.Unmanaged {
		addRequests(n)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for k := range m.requests {
		if _, ok := requests[k]; !ok {
			nodePodRequests.DeleteLabelValues(k[:]...)
		}
	}
	for pool := range m.cost {
		if _, ok := cost[pool]; !ok {
			nodePoolCost.DeleteLabelValues(pool)
			nodePoolCostTotal.DeleteLabelValues(pool)
		}
	}
	m.requests, m.cost = map[[3]string]bool{}, map[string]bool{}
	for k, v := range requests {
		nodePodRequests.WithLabelValues(k[:]...).Set(v)
		m.requests[k] = true
	}
	for pool, v := range cost {
		nodePoolCost.WithLabelValues(pool).Set(v)
		nodePoolCostTotal.WithLabelValues(pool).Set(v)
		m.cost[pool] = true
	}
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
