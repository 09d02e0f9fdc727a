package controller

import (
	"context"
	"encoding/json"
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

// nominateWorkers is how many of a Node's pods are nominated at once; the
// client's rate limit (--kube-client-qps) bounds them all together.
const nominateWorkers = 16

// nominator nominates the pods a claim was launched for to its Node as the
// Node registers, before it takes pods (provisioning.Policy.NominatesPods,
// state.Store.Nominate). A pod's status.nominatedNodeName is a hint:
// kube-scheduler tries that node first and keeps room there for the pod,
// and clears the hint when the pod fits nowhere. A nomination that fails
// is logged and left: the pod is placed as if none had been tried.
type nominator struct {
	client client.Client
	store  *state.Store
}

// nominate patches the status of each of the claim's pods to name node.
func (n *nominator) nominate(ctx context.Context, claim, node string) {
	pods := n.store.Nominate(claim, node)
	if len(pods) == 0 {
		return
	}
	body, err := json.Marshal(map[string]any{"status": map[string]string{"nominatedNodeName": node}})
	if err != nil {
		logError(ctx, err, "nominating pods")
		return
	}
	patch := client.RawPatch(types.MergePatchType, body)
	var failed atomic.Int32
	var last atomic.Value
	workqueue.ParallelizeUntil(ctx, nominateWorkers, len(pods), func(i int) {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: pods[i].Namespace, Name: pods[i].Name}}
		err := n.client.Status().Patch(ctx, p, patch)
		// Gone, or bound meanwhile (the API server refuses a nomination
		// of a bound pod as invalid): nothing to nominate.
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsInvalid(err) {
			failed.Add(1)
			last.Store(err)
		}
	})
	if f := failed.Load(); f > 0 {
		log.FromContext(ctx).Info("could not nominate some pods to the node launched for them; kube-scheduler places them by its scores", "node", node, "failed", f, "pods", len(pods), "error", last.Load())
		return
	}
	log.FromContext(ctx).V(1).Info("nominated pods to the node launched for them", "nodeclaim", claim, "node", node, "pods", len(pods))
}
