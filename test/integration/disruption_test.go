//go:build integration

package integration

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
)

// TestDriftReplacesWithinBudget: three nodes of a NodePool whose budget
// allows one disruption at a time; a change of the pool's template drifts
// all three, and Joiner replaces them — each replacement launched and
// initialized before its node goes — never deleting two at once (watched
// on every NodeClaim event), until every claim carries the new template
// and every pod runs again.
func TestDriftReplacesWithinBudget(t *testing.T) {
	ctx := context.Background()
	startCluster(t)
	scheme, kc := controllerClient(t)
	c, stop := startController(t, scheme)
	defer stop()

	const pool = "drifting"
	np := createPool(t, kc, pool, func(np *v1.NodePool) {
		np.Spec.Template.Labels["rev"] = "a"
		np.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration("Never") // drift alone
		np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "1"}}
	})
	ns := testNamespace(t, "drift")
	d := deployment(ns, "spread", "500m", "512Mi", map[string]string{"pool": pool})
	d.Spec.Template.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
		TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "spread"}}}}}}
	if err := kc.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	scale(t, kc, d, 3)
	// last says what allRunning saw last, for a failure's message.
	var last string
	allRunning := func(rev string) func(context.Context) (bool, error) {
		return func(ctx context.Context) (bool, error) {
			pods, err := podsOf(ctx, kc, ns)
			if err != nil {
				return false, err
			}
			var claims v1.NodeClaimList
			if err := kc.List(ctx, &claims, client.MatchingLabels{v1.LabelNodePool: pool}); err != nil {
				return false, err
			}
			ok := len(pods) == 3 && len(claims.Items) == 3
			last = ""
			for _, p := range pods {
				last += fmt.Sprintf("pod %s on %q %s deleting=%v; ", p.Name, p.Spec.NodeName, p.Status.Phase, p.DeletionTimestamp != nil)
				ok = ok && p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil
			}
			for _, nc := range claims.Items {
				initialized := claimCondition(&nc, v1.ConditionInitialized)
				last += fmt.Sprintf("claim %s rev=%q initialized=%v deleting=%v; ", nc.Name, nc.Labels["rev"], initialized, nc.DeletionTimestamp != nil)
				ok = ok && nc.Labels["rev"] == rev && nc.DeletionTimestamp == nil && initialized
			}
			return ok, nil
		}
	}
	defer func() {
		if t.Failed() {
			t.Logf("last seen: %s", last)
		}
	}()
	eventuallyWithin(t, 2*time.Minute, "three pods Running on three nodes of rev a", allRunning("a"))

	// Every NodeClaim event from here on: how many of the pool's claims are
	// being deleted at once.
	wc, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	w, err := wc.Watch(ctx, &v1.NodeClaimList{}, client.MatchingLabels{v1.LabelNodePool: pool})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	deleting, most, deleted := map[string]bool{}, 0, map[string]bool{}
	// A disruption pass while the first drifted claim is being deleted:
	// the loop's own passes may all fall before or after it (the next
	// comes a second after a command is carried out, and a kwok node is
	// gone sooner), and the Events below are that pass's.
	var heldPass sync.Once
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			nc, ok := ev.Object.(*v1.NodeClaim)
			if !ok {
				continue
			}
			if nc.DeletionTimestamp != nil {
				heldPass.Do(func() { _, _ = c.Disrupt(ctx) })
			}
			mu.Lock()
			switch {
			case ev.Type == watch.Deleted:
				delete(deleting, nc.Name)
				deleted[nc.Name] = true
			case nc.DeletionTimestamp != nil:
				deleting[nc.Name] = true
			}
			most = max(most, len(deleting))
			mu.Unlock()
		}
	}()

	patch := client.MergeFrom(np.DeepCopy())
	np.Spec.Template.Labels["rev"] = "b"
	if err := kc.Patch(ctx, np, patch); err != nil {
		t.Fatal(err)
	}
	eventuallyWithin(t, 4*time.Minute, "every node replaced by one of rev b, every pod Running again", allRunning("b"))
	w.Stop()
	<-done
	mu.Lock()
	defer mu.Unlock()
	if len(deleted) != 3 || most != 1 {
		t.Fatalf("drift under a budget of one node: %d claims deleted, at most %d at once (want 3, and 1)", len(deleted), most)
	}
	// While one node drifted, the budget held the others: Events say so on
	// the pool and on the held claims, in the engine's words.
	var events eventsv1.EventList
	if err := kc.List(ctx, &events); err != nil {
		t.Fatal(err)
	}
	onPool, onClaim := false, false
	for _, e := range events.Items {
		if e.Reason != "DisruptionBlocked" {
			continue
		}
		onPool = onPool || (e.Regarding.Kind == "NodePool" && e.Regarding.Name == pool &&
			strings.Contains(e.Note, "No allowed disruptions for reason Drifted: budgets[0] (nodes 1) allows 0 Drifted disruption(s)"))
		onClaim = onClaim || (e.Regarding.Kind == "NodeClaim" && strings.Contains(e.Note, "Cannot disrupt NodeClaim: NodePool "+pool+"'s budget allows no more Drifted disruptions now"))
	}
	if !onPool || !onClaim {
		t.Errorf("DisruptionBlocked events: on the pool %v, on a held claim %v", onPool, onClaim)
	}
	cleanUpPool(t, kc, pool, ns, d)
}

// TestPDBBlocksDrainUntilTerminationGracePeriod: a pod whose PDB allows no
// disruption keeps its node draining — the Eviction API refuses it — until
// the NodePool's terminationGracePeriod runs out from the claim's deletion;
// then the pod is deleted and the node goes.
func TestPDBBlocksDrainUntilTerminationGracePeriod(t *testing.T) {
	ctx := context.Background()
	startCluster(t)
	scheme, kc := controllerClient(t)
	_, stop := startController(t, scheme)
	defer stop()

	const pool, grace = "guarded", 20 * time.Second
	createPool(t, kc, pool, func(np *v1.NodePool) {
		np.Spec.Template.Spec.TerminationGracePeriod = &metav1.Duration{Duration: grace}
		np.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration("Never")
	})
	ns := testNamespace(t, "pdb")
	d := deployment(ns, "guarded", "500m", "512Mi", map[string]string{"pool": pool})
	// As upstream, a pod is deleted early enough for its own grace period
	// to end with the node's: 20 s - 5 s after the claim's deletion.
	const podGrace = 5 * time.Second
	d.Spec.Template.Spec.TerminationGracePeriodSeconds = ptr.To(int64(podGrace.Seconds()))
	if err := kc.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	zero := intstr.FromInt32(0)
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "guarded", Namespace: ns},
		Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &zero, Selector: d.Spec.Selector}}
	if err := kc.Create(ctx, pdb); err != nil {
		t.Fatal(err)
	}
	scale(t, kc, d, 1)
	var pod corev1.Pod
	eventuallyWithin(t, 2*time.Minute, "the pod Running, its PDB allowing no disruption", func(ctx context.Context) (bool, error) {
		pods, err := podsOf(ctx, kc, ns)
		if err != nil || len(pods) != 1 || pods[0].Status.Phase != corev1.PodRunning {
			return false, err
		}
		pod = pods[0]
		if err := kc.Get(ctx, client.ObjectKeyFromObject(pdb), pdb); err != nil {
			return false, err
		}
		return pdb.Status.ObservedGeneration == pdb.Generation && pdb.Status.CurrentHealthy == 1 && pdb.Status.DisruptionsAllowed == 0, nil
	})
	var nc v1.NodeClaim
	var claims v1.NodeClaimList
	if err := kc.List(ctx, &claims, client.MatchingLabels{v1.LabelNodePool: pool}); err != nil || len(claims.Items) != 1 {
		t.Fatalf("want the pool's one claim: %v %v", claims.Items, err)
	}
	nc = claims.Items[0]
	if err := kc.Delete(ctx, &nc); err != nil {
		t.Fatal(err)
	}
	if err := kc.Get(ctx, client.ObjectKeyFromObject(&nc), &nc); err != nil {
		t.Fatal(err)
	}
	deletedAt := nc.DeletionTimestamp.Time
	// The pod's own deletion (not an eviction) starts once the node's grace
	// period, less the pod's, is up.
	var podDeletedAt time.Time
	eventuallyWithin(t, grace+time.Minute, "the pod deleted once the terminationGracePeriod ran out", func(ctx context.Context) (bool, error) {
		var p corev1.Pod
		err := kc.Get(ctx, client.ObjectKeyFromObject(&pod), &p)
		if client.IgnoreNotFound(err) != nil {
			return false, err
		}
		if err != nil || p.DeletionTimestamp != nil {
			podDeletedAt = time.Now()
			if err == nil {
				podDeletedAt = p.DeletionTimestamp.Time
			}
			return true, nil
		}
		return false, nil
	})
	// API timestamps have whole seconds: allow one.
	if waited := podDeletedAt.Sub(deletedAt); waited < grace-podGrace-time.Second {
		t.Fatalf("the PDB-guarded pod was deleted %s after its claim's deletion, before the %s terminationGracePeriod less its own %s", waited, grace, podGrace)
	}
	eventuallyWithin(t, time.Minute, "the claim and its Node gone", func(ctx context.Context) (bool, error) {
		err := kc.Get(ctx, client.ObjectKeyFromObject(&nc), &v1.NodeClaim{})
		if client.IgnoreNotFound(err) != nil || err == nil {
			return false, client.IgnoreNotFound(err)
		}
		err = kc.Get(ctx, client.ObjectKey{Name: nc.Status.NodeName}, &corev1.Node{})
		return err != nil && client.IgnoreNotFound(err) == nil, nil
	})
	if err := kc.Delete(ctx, pdb); err != nil {
		t.Fatal(err)
	}
	cleanUpPool(t, kc, pool, ns, d)
}

// cleanUpPool scales the Deployments to nothing and removes the pool's
// claims, Nodes and the pool, for the tests after.
func cleanUpPool(t *testing.T, kc client.Client, pool, ns string, deployments ...*appsv1.Deployment) {
	t.Helper()
	ctx := context.Background()
	for _, d := range deployments {
		scale(t, kc, d, 0)
	}
	eventuallyWithin(t, 2*time.Minute, "every pod gone after the scale to 0", func(ctx context.Context) (bool, error) {
		pods, err := podsOf(ctx, kc, ns)
		return len(pods) == 0, err
	})
	if err := kc.DeleteAllOf(ctx, &v1.NodeClaim{}, client.MatchingLabels{v1.LabelNodePool: pool}); err != nil {
		t.Fatal(err)
	}
	eventuallyWithin(t, time.Minute, "the pool's claims and Nodes gone", func(ctx context.Context) (bool, error) {
		var left v1.NodeClaimList
		if err := kc.List(ctx, &left, client.MatchingLabels{v1.LabelNodePool: pool}); err != nil {
			return false, err
		}
		var nodes corev1.NodeList
		if err := kc.List(ctx, &nodes, client.MatchingLabels{v1.LabelNodePool: pool}); err != nil {
			return false, err
		}
		return len(left.Items) == 0 && len(nodes.Items) == 0, nil
	})
	if err := kc.Delete(ctx, &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: pool}}); err != nil {
		t.Error(err)
	}
}
