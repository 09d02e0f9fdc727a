package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joiner-autoscaler/joiner/pkg/apis/autoscaling/v1beta1"
	"github.com/joiner-autoscaler/joiner/pkg/buffer"
	"github.com/joiner-autoscaler/joiner/pkg/buffer/kube"
	"github.com/joiner-autoscaler/joiner/pkg/state"
)

// bufferResync is how often every CapacityBuffer is resolved again (and
// provisioning woken), as upstream's buffer controller requeues each one:
// it does not watch the workloads a buffer's percentage follows.
const bufferResync = 30 * time.Second

// capacityBuffers keeps the Store's virtual pods from the cluster's
// CapacityBuffers (upstream's CapacityBuffer feature gate) and writes the
// buffers' status: ReadyForProvisioning when resolved, Provisioning after
// each provisioning pass. Its informer handlers only wake its loop.
//
// It is safe for concurrent use.
type capacityBuffers struct {
	reader client.Reader // the manager's cache
	client client.Client // status writes
	store  *state.Store
	batch  *Batcher
	clock  clock.WithTicker
	wake   chan struct{}

	mu       sync.Mutex
	resolved map[string]buffer.Resolved // by namespace/name, as last resolved
}

// changed wakes the loop: a buffer, a PodTemplate or a workload changed.
func (b *capacityBuffers) changed() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// loop resolves the buffers when woken and every bufferResync, from the
// moment the gate opens.
func (b *capacityBuffers) loop(ctx context.Context, gate *syncGate) error {
	if !gate.wait(ctx) {
		return nil
	}
	t := b.clock.NewTicker(bufferResync)
	defer t.Stop()
	for {
		if err := b.resolve(ctx); err != nil {
			logError(ctx, err, "resolving CapacityBuffers")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		case <-b.wake:
		}
	}
}

// resolve resolves every buffer, hands the Store their virtual pods,
// writes each buffer's status where it changed and wakes provisioning.
func (b *capacityBuffers) resolve(ctx context.Context) error {
	var list v1beta1.CapacityBufferList
	if err := b.reader.List(ctx, &list); err != nil {
		return err
	}
	sort.Slice(list.Items, func(i, j int) bool { return key(&list.Items[i]) < key(&list.Items[j]) })
	resolved := map[string]buffer.Resolved{}
	lookup := kube.Lookup(ctx, b.reader)
	var pods []*corev1.Pod
	var errs []error
	for i := range list.Items {
		cb := &list.Items[i]
		r := buffer.Resolve(cb, lookup)
		resolved[key(cb)] = r
		pods = append(pods, buffer.VirtualPods(r)...)
		if err := b.writeStatus(ctx, cb, buffer.Status(r, cb.Status, metav1.NewTime(b.clock.Now()))); err != nil {
			errs = append(errs, err)
		}
	}
	b.mu.Lock()
	b.resolved = resolved
	b.mu.Unlock()
	b.store.SetBufferPods(pods)
	if len(pods) > 0 {
		b.batch.Trigger()
	}
	return errors.Join(errs...)
}

func key(cb *v1beta1.CapacityBuffer) string { return cb.Namespace + "/" + cb.Name }

// provisioned writes each buffer's Provisioning condition after a pass
// that placed its chunks as byBuffer says, and tells the Store which
// nodes hold chunks.
func (b *capacityBuffers) provisioned(ctx context.Context, byBuffer map[string]buffer.Placement, onNodes map[string]int) {
	b.store.SetBufferPlacement(onNodes)
	b.mu.Lock()
	resolved := b.resolved
	b.mu.Unlock()
	for _, k := range slices.Sorted(maps.Keys(resolved)) {
		r := resolved[k]
		c := buffer.ProvisioningCondition(r, byBuffer[k])
		if c == nil {
			continue
		}
		var cb v1beta1.CapacityBuffer
		if err := b.reader.Get(ctx, client.ObjectKeyFromObject(r.Buffer), &cb); err != nil {
			if !apierrors.IsNotFound(err) {
				logError(ctx, err, "reading a CapacityBuffer")
			}
			continue
		}
		st := *cb.Status.DeepCopy()
		c.LastTransitionTime = metav1.NewTime(b.clock.Now())
		meta.SetStatusCondition(&st.Conditions, *c)
		if err := b.writeStatus(ctx, &cb, st); err != nil {
			logError(ctx, err, "writing a CapacityBuffer's Provisioning condition")
		}
	}
}

// writeStatus patches cb's status to st unless it is so already.
func (b *capacityBuffers) writeStatus(ctx context.Context, cb *v1beta1.CapacityBuffer, st v1beta1.CapacityBufferStatus) error {
	if apiequality.Semantic.DeepEqual(cb.Status, st) {
		return nil
	}
	patch := client.MergeFromWithOptions(cb.DeepCopy(), client.MergeFromWithOptimisticLock{})
	cb = cb.DeepCopy()
	cb.Status = st
	if err := b.client.Status().Patch(ctx, cb, patch); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("writing the status of CapacityBuffer %s: %w", key(cb), err)
	}
	return nil
}
