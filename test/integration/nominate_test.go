//go:build integration

package integration

import (
	"context"
	"maps"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
)

// TestPinnedPodsLandOnTheNodesPlannedForThem: the pods of a zone spread
// that may not be broken are nominated to the Node launched for them
// before kube-scheduler may use it (status.nominatedNodeName, KEP-5278),
// and kube-scheduler binds as many to each node as were nominated there;
// the binding clears the nominations. Pods free to go
// anywhere are not nominated (a write each, for nothing). Without the
// nominations no pod carries one.
func TestPinnedPodsLandOnTheNodesPlannedForThem(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	startCluster(t)
	scheme, kc := controllerClient(t)
	_, stop := startController(t, scheme)
	defer stop()

	const pool = "nominate"
	createPool(t, kc, pool, func(np *v1.NodePool) {
		np.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration("Never") // this test is about provisioning
	})
	ns := testNamespace(t, "nominate")

	// Every pod's nomination as the watch saw it last before its binding.
	wc, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	w, err := wc.Watch(ctx, &corev1.PodList{}, client.InNamespace(ns))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var mu sync.Mutex
	nominated, bound := map[string]string{}, map[string]string{}
	go func() {
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			mu.Lock()
			if p.Status.NominatedNodeName != "" {
				nominated[p.Name] = p.Status.NominatedNodeName
			}
			if p.Spec.NodeName != "" {
				bound[p.Name] = p.Spec.NodeName
			}
			mu.Unlock()
		}
	}()

	spread := deployment(ns, "spread", "500m", "512Mi", map[string]string{"pool": pool})
	spread.Spec.Template.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone,
		WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "spread"}}}}
	free := deployment(ns, "free", "250m", "256Mi", map[string]string{"pool": pool})
	// Before the controller stops (defers run last first): no Node is left
	// to the tests after this one.
	defer cleanUpPool(t, kc, pool, ns, spread, free)
	for _, d := range []client.Object{spread, free} {
		if err := kc.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	scale(t, kc, spread, 12)
	scale(t, kc, free, 12)
	waitRunningWithin(t, kc, ns, 24, 3*time.Minute)

	pods, err := podsOf(ctx, kc, ns)
	if err != nil {
		t.Fatal(err)
	}
	var claims v1.NodeClaimList
	if err := kc.List(ctx, &claims, client.MatchingLabels{v1.LabelNodePool: pool}); err != nil {
		t.Fatal(err)
	}
	nodes := map[string]bool{}
	for _, nc := range claims.Items {
		nodes[nc.Status.NodeName] = true
	}
	mu.Lock()
	defer mu.Unlock()
	// kube-scheduler may swap two pods of the Deployment (one it takes
	// first may not go to its node without breaking the spread yet), which
	// changes nothing: each node runs as many of them as were planned there.
	spreadPods, planned, landed := 0, map[string]int{}, map[string]int{}
	for _, p := range pods {
		at, was := nominated[p.Name]
		switch p.Labels["app"] {
		case "spread":
			spreadPods++
			if !was {
				t.Errorf("spread pod %s, bound to %s, was never nominated", p.Name, p.Spec.NodeName)
			} else if !nodes[at] {
				t.Errorf("spread pod %s was nominated to %s, no Node of pool %s's claims %v", p.Name, at, pool, nodes)
			}
			planned[at]++
			landed[p.Spec.NodeName]++
		case "free":
			if was {
				t.Errorf("free pod %s was nominated to %s: nothing pins it", p.Name, at)
			}
		}
		if p.Status.NominatedNodeName != "" {
			t.Errorf("pod %s, bound to %s, still names %s nominated", p.Name, p.Spec.NodeName, p.Status.NominatedNodeName)
		}
	}
	if spreadPods != 12 {
		t.Fatalf("%d spread pods, want 12", spreadPods)
	}
	if !maps.Equal(planned, landed) {
		t.Errorf("spread pods by node: %v nominated, %v bound", planned, landed)
	}
	t.Logf("%d NodeClaims; nominations %v; bound %v", len(claims.Items), nominated, bound)
}
