//go:build integration

package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/controller"
	"github.com/joiner-autoscaler/joiner/pkg/schedulerconfig"
)

// spreadDefaults is the cluster's default topology spread, as the
// kube-scheduler of TestDefaultSpread runs it and Joiner is told of it.
const spreadDefaults = `podTopologySpread:
  defaultConstraints:
  - maxSkew: 1
    topologyKey: topology.kubernetes.io/zone
    whenUnsatisfiable: DoNotSchedule
`

// TestDefaultSpread runs kube-scheduler with a default zone spread
// (DoNotSchedule, maxSkew 1) and Joiner with the same --scheduler-config:
// a Deployment whose pods declare no spread of their own, selected by a
// Service, gets NodeClaims in every zone of its NodePool, and its pods run
// spread over them. Without the defaults Joiner would put the six pods on
// one node in one zone — as it does for the second Deployment, which
// declares a spread of its own over hostnames with maxSkew 6: the
// defaults are not applied to it.
func TestDefaultSpread(t *testing.T) {
	ctx := context.Background()
	config := filepath.Join(t.TempDir(), "scheduler.yaml")
	kubeconfig := writeKubeconfig(t)
	doc := fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %s
leaderElection:
  leaderElect: false
profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: PodTopologySpread
    args:
      defaultingType: List
      defaultConstraints:
      - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule}
`, kubeconfig)
	if err := os.WriteFile(config, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	startCluster(t, "--config="+config)
	sc, err := schedulerconfig.Parse([]byte(spreadDefaults), "test")
	if err != nil {
		t.Fatal(err)
	}
	scheme, kc := controllerClient(t)
	_, stop := runController(t, scheme, kwokProvider(t), func(o *controller.Options) { o.SchedulerConfig = sc })
	defer stop()

	const pool = "spread"
	zones := []string{"us-east-1a", "us-east-1b", "us-east-1c"}
	createPool(t, kc, pool, func(np *v1.NodePool) {
		np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
			v1.NodeSelectorRequirementWithMinValues{Key: v1.LabelZone, Operator: corev1.NodeSelectorOpIn, Values: zones})
		np.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration("Never")
	})
	ns := testNamespace(t, "spread")
	web := deployment(ns, "web", "1", "1Gi", map[string]string{"pool": pool})
	packed := deployment(ns, "packed", "1", "1Gi", map[string]string{"pool": pool})
	packed.Spec.Template.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 6, TopologyKey: corev1.LabelHostname,
		WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "packed"}}}}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Port: 80}}}}
	for _, o := range []client.Object{svc, web, packed} {
		if err := kc.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	// Before the controller stops: an untainted pool left behind takes
	// the pods of the tests after this one (CI found it so).
	defer removePool(t, kc, pool, web)
	defer func() { _ = kc.Delete(ctx, packed) }()
	scale(t, kc, web, 6)
	waitRunningWithin(t, kc, ns, 6, 3*time.Minute)
	// Joiner's part: the claims it made for web span the NodePool's three
	// zones, the defaults applied. kube-scheduler then spreads the pods
	// as the Nodes register: while a zone has no Node yet, its maxSkew is
	// counted over the zones that have one, so 3-2-1 is as right as
	// 2-2-2 (CI met both) — every zone runs some of web's pods.
	var claims v1.NodeClaimList
	if err := kc.List(ctx, &claims, client.MatchingLabels{v1.LabelNodePool: pool}); err != nil {
		t.Fatal(err)
	}
	claimZones := map[string]bool{}
	for _, nc := range claims.Items {
		claimZones[nc.Labels[v1.LabelZone]] = true
	}
	if len(claimZones) != 3 {
		t.Errorf("web's NodeClaims are in zones %v: want one in each of the NodePool's 3 zones", claimZones)
	}
	if webZones := podZones(t, kc, ns, "web"); len(webZones) != 3 {
		t.Errorf("web's 6 pods by zone %v: want some in each of the NodePool's 3 zones", webZones)
	}

	before := nodeCount(t, kc)
	scale(t, kc, packed, 6)
	waitRunningWithin(t, kc, ns, 12, 3*time.Minute)
	// kube-scheduler puts what fits on the spare room of web's nodes;
	// Joiner packs the rest on one new node. Had it applied the zone
	// default to packed's pods it would have launched one per zone.
	if after := nodeCount(t, kc); after != before+1 {
		t.Errorf("packed's pods (by zone %v) took %d new nodes, want 1: the zone default was applied to a pod with a spread of its own",
			podZones(t, kc, ns, "packed"), after-before)
	}
}

// nodeCount is the number of Nodes in the cluster.
func nodeCount(t *testing.T, kc client.Client) int {
	t.Helper()
	var nodes corev1.NodeList
	if err := kc.List(context.Background(), &nodes); err != nil {
		t.Fatal(err)
	}
	return len(nodes.Items)
}

// podZones counts app's pods by their node's zone, most first.
func podZones(t *testing.T, kc client.Client, ns, app string) []int {
	t.Helper()
	ctx := context.Background()
	var pods corev1.PodList
	if err := kc.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"app": app}); err != nil {
		t.Fatal(err)
	}
	byZone := map[string]int{}
	for _, p := range pods.Items {
		var n corev1.Node
		if err := kc.Get(ctx, client.ObjectKey{Name: p.Spec.NodeName}, &n); err != nil {
			t.Fatal(err)
		}
		byZone[n.Labels[corev1.LabelTopologyZone]]++
	}
	var counts []int
	for _, c := range byZone {
		counts = append(counts, c)
	}
	sort.Sort(sort.Reverse(sort.IntSlice(counts)))
	return counts
}
