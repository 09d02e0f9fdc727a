package controller

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/joiner-autoscaler/joiner/pkg/state"
)

// nominateWorkers is how many pods are nominated at once; the client's
// rate limit (--kube-client-qps) bounds them all together.
const nominateWorkers = 32

// nominator nominates the pods a claim was launched for to its Node as the
// Node registers, before it takes pods (provisioning.Policy.NominatesPods,
// state.Store.Nominate). A pod's status.nominatedNodeName is a hint:
// kube-scheduler tries that node first and keeps room there for the pod.
// It clears the hint when the pod fits nowhere — also when it tries the
// pod while its node is still closed, because another node opened — so
// the Nodes of a launch cohort open together, once the whole cohort's
// pods are nominated: the first member to register nominates them all,
// the others wait for it. A nomination that fails is logged and left: the
// pod is placed as if none had been tried.
type nominator struct {
	client client.Client
	store  *state.Store
	mu     sync.Mutex
	// running are the cohorts whose nominations are under way, each done
	// when they are.
	running map[string]chan struct{}
}

// nominate nominates the pods of the claims (claim name → its Node's
// name): one claim's, or its launch cohort's (cohort non-empty) whose
// Nodes have appeared. It returns once they have all been tried, by this
// call or, for a cohort, by the one under way.
func (n *nominator) nominate(ctx context.Context, cohort string, nodes map[string]string) {
	if cohort == "" {
		n.patch(ctx, nodes)
		return
	}
	n.mu.Lock()
	done, underWay := n.running[cohort]
	if !underWay {
		if n.running == nil {
			n.running = map[string]chan struct{}{}
		}
		done = make(chan struct{})
		n.running[cohort] = done
	}
	n.mu.Unlock()
	if underWay {
		select {
		case <-done:
		case <-ctx.Done():
		}
		return
	}
	n.patch(ctx, nodes)
	n.mu.Lock()
	delete(n.running, cohort) // a member that comes later nominates its own
	n.mu.Unlock()
	close(done)
}

// patch sets the status.nominatedNodeName of each claim's pods to the
// claim's Node.
func (n *nominator) patch(ctx context.Context, nodes map[string]string) {
	type nomination struct{ pod, node string }
	var todo []nomination
	var ns []string
	for claim, node := range nodes {
		for _, p := range n.store.Nominate(claim, node) {
			todo = append(todo, nomination{node: node, pod: p.Name})
			ns = append(ns, p.Namespace)
		}
	}
	if len(todo) == 0 {
		return
	}
	var failed atomic.Int32
	var last atomic.Value
	workqueue.ParallelizeUntil(ctx, nominateWorkers, len(todo), func(i int) {
		body, err := json.Marshal(map[string]any{"status": map[string]string{"nominatedNodeName": todo[i].node}})
		if err == nil {
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns[i], Name: todo[i].pod}}
			err = n.client.Status().Patch(ctx, p, client.RawPatch(types.MergePatchType, body))
		}
		// Gone, or bound meanwhile (the API server refuses a nomination
		// of a bound pod as invalid): nothing to nominate.
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsInvalid(err) {
			failed.Add(1)
			last.Store(err)
		}
	})
	if f := failed.Load(); f > 0 {
		log.FromContext(ctx).Info("could not nominate some pods to the nodes launched for them; kube-scheduler places them by its scores", "failed", f, "pods", len(todo), "nodes", len(nodes), "error", last.Load())
		return
	}
	log.FromContext(ctx).V(1).Info("nominated pods to the nodes launched for them", "pods", len(todo), "nodes", len(nodes))
}
