package trace

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/joiner-autoscaler/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/apis/v1alpha1"
)

// Kind is one kind a recording watches.
type Kind struct {
	Name    string
	newList func() client.ObjectList
	// Namespaced kinds take the recording's namespace; Workload kinds its
	// label selector too.
	Namespaced, Workload bool
	// fields, when set, selects the objects on the API server; keep, when
	// set, the ones of those the trace records.
	fields fields.Selector
	keep   func(runtime.Object) bool
}

// Kinds are what `joiner record` watches: pods and their owners,
// autoscalers, disruption budgets, storage, and the autoscaler's side —
// Nodes, NodeClaims, NodePools, node classes and overlays.
var Kinds = []Kind{
	{Name: "Pod", newList: func() client.ObjectList { return &corev1.PodList{} }, Namespaced: true, Workload: true},
	{Name: "Deployment", newList: func() client.ObjectList { return &appsv1.DeploymentList{} }, Namespaced: true, Workload: true},
	{Name: "StatefulSet", newList: func() client.ObjectList { return &appsv1.StatefulSetList{} }, Namespaced: true, Workload: true},
	{Name: "ReplicaSet", newList: func() client.ObjectList { return &appsv1.ReplicaSetList{} }, Namespaced: true, Workload: true},
	{Name: "DaemonSet", newList: func() client.ObjectList { return &appsv1.DaemonSetList{} }, Namespaced: true, Workload: true},
	{Name: "Job", newList: func() client.ObjectList { return &batchv1.JobList{} }, Namespaced: true, Workload: true},
	{Name: "CronJob", newList: func() client.ObjectList { return &batchv1.CronJobList{} }, Namespaced: true, Workload: true},
	{Name: "HorizontalPodAutoscaler", newList: func() client.ObjectList { return &autoscalingv2.HorizontalPodAutoscalerList{} }, Namespaced: true},
	{Name: "PodDisruptionBudget", newList: func() client.ObjectList { return &policyv1.PodDisruptionBudgetList{} }, Namespaced: true},
	{Name: "PersistentVolumeClaim", newList: func() client.ObjectList { return &corev1.PersistentVolumeClaimList{} }, Namespaced: true},
	{Name: "PersistentVolume", newList: func() client.ObjectList { return &corev1.PersistentVolumeList{} }},
	{Name: "StorageClass", newList: func() client.ObjectList { return &storagev1.StorageClassList{} }},
	{Name: "Node", newList: func() client.ObjectList { return &corev1.NodeList{} }},
	{Name: "NodeClaim", newList: func() client.ObjectList { return &v1.NodeClaimList{} }},
	{Name: "NodePool", newList: func() client.ObjectList { return &v1.NodePoolList{} }},
	{Name: "EC2NodeClass", newList: func() client.ObjectList { return &awsv1.EC2NodeClassList{} }},
	{Name: "NodeOverlay", newList: func() client.ObjectList { return &v1alpha1.NodeOverlayList{} }},
	// The cloud's interruptions of instances, as the autoscaler's Events
	// on their NodeClaims say (in every namespace: a cluster-wide object's
	// Events are in default).
	{Name: "Event", newList: func() client.ObjectList { return &corev1.EventList{} },
		fields: fields.OneTermEqualSelector("involvedObject.kind", "NodeClaim"), keep: func(o runtime.Object) bool {
			ev, ok := o.(*corev1.Event)
			return ok && IsInterruption(ev)
		}},
}

// InterruptionReasons are the reasons of the Events an autoscaler records
// on a NodeClaim whose instance the cloud takes away — upstream
// Karpenter's AWS provider's and Joiner's — and so deletes.
var InterruptionReasons = map[string]bool{
	"SpotInterrupted": true, "SpotInterruption": true, // upstream's, Joiner's
	"CapacityReservationInstanceInterrupted": true, "CapacityReservationInterrupted": true,
	"InstanceStopping": true, "InstanceTerminating": true,
	"InstanceUnhealthy": true, "ScheduledChange": true,
}

// IsInterruption reports whether ev is an interruption's: on a NodeClaim,
// for one of InterruptionReasons.
func IsInterruption(ev *corev1.Event) bool {
	return ev.InvolvedObject.Kind == "NodeClaim" && InterruptionReasons[ev.Reason]
}

// Scheme knows every kind in Kinds.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme, batchv1.AddToScheme, autoscalingv2.AddToScheme,
		policyv1.AddToScheme, storagev1.AddToScheme, v1.AddToScheme, v1alpha1.AddToScheme, awsv1.AddToScheme} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Options of a recording.
type Options struct {
	// Namespace limits the namespaced kinds to one namespace ("" for all).
	Namespace string
	// Selector limits pods and their owners to those it selects (nil for
	// all). Cluster-wide kinds — Nodes, NodeClaims, NodePools, classes,
	// storage — are recorded whole.
	Selector labels.Selector
	// Server names the cluster in the header.
	Server string
	// Clock stamps the records (the real clock when nil).
	Clock clock.WithTicker
	// PageSize of the lists (500 when 0).
	PageSize int64
	// FlushEvery pushes the records to the file (5 s when 0), so a
	// recording that is killed keeps all but the last moments.
	FlushEvery time.Duration
}

// Recorder writes a live cluster's trace.
type Recorder struct {
	c     client.WithWatch
	w     *Writer
	opts  Options
	kinds []Kind
}

// Start checks which kinds the cluster serves and writes the trace's
// header to w; Run then records.
func Start(ctx context.Context, c client.WithWatch, out interface{ Write([]byte) (int, error) }, opts Options) (*Recorder, error) {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.PageSize == 0 {
		opts.PageSize = 500
	}
	if opts.FlushEvery == 0 {
		opts.FlushEvery = 5 * time.Second
	}
	h := Header{Started: opts.Clock.Now(), Server: opts.Server, Namespace: opts.Namespace}
	if opts.Selector != nil && !opts.Selector.Empty() {
		h.Selector = opts.Selector.String()
	}
	r := &Recorder{c: c, opts: opts}
	for _, k := range Kinds {
		err := c.List(ctx, k.newList(), client.Limit(1))
		switch {
		case err == nil:
			r.kinds = append(r.kinds, k)
			h.Kinds = append(h.Kinds, k.Name)
		case meta.IsNoMatchError(err) || apierrors.IsNotFound(err):
			h.Notes = append(h.Notes, fmt.Sprintf("%s: the cluster does not serve the kind; not recorded", k.Name))
		case apierrors.IsForbidden(err):
			return nil, fmt.Errorf("listing %s: %w (the recorder needs get, list and watch on it: see docs/trace.md for the ClusterRole)", k.Name, err)
		default:
			return nil, fmt.Errorf("listing %s: %w", k.Name, err)
		}
	}
	w, err := NewWriter(out, h)
	if err != nil {
		return nil, err
	}
	r.w = w
	return r, nil
}

// Run records until ctx ends, then closes the trace (its last record is
// OpEnd) and returns nil; or returns the first error that stopped it, the
// trace closed as far as it got.
func (r *Recorder) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	errs := make([]error, len(r.kinds))
	for i, k := range r.kinds {
		wg.Go(func() {
			if err := r.record(ctx, k); err != nil && ctx.Err() == nil {
				errs[i] = fmt.Errorf("recording %s: %w", k.Name, err)
				cancel(errs[i])
			}
		})
	}
	t := r.opts.Clock.NewTicker(r.opts.FlushEvery)
	flushed := make(chan struct{})
	go func() {
		defer close(flushed)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C():
				if err := r.w.Flush(); err != nil {
					cancel(err)
					return
				}
			}
		}
	}()
	wg.Wait()
	cancel(nil)
	<-flushed
	err := errors.Join(errs...)
	return errors.Join(err, r.w.Close(r.opts.Clock.Now()))
}

// record lists a kind and follows its watch from the list's
// resourceVersion, through reconnects, until ctx ends; a watch that cannot
// resume (its resourceVersion expired) is a gap, recorded, and the kind is
// listed again.
func (r *Recorder) record(ctx context.Context, k Kind) error {
	rv, err := r.list(ctx, k)
	if err != nil {
		return err
	}
	for ctx.Err() == nil {
		next, gone, err := r.follow(ctx, k, rv)
		switch {
		case ctx.Err() != nil:
			return nil
		case gone != "":
			if err := r.w.Write(Record{Time: r.opts.Clock.Now(), Op: OpGap, Kind: k.Name, Gap: &Gap{From: rv, Why: gone}}); err != nil {
				return err
			}
			if rv, err = r.list(ctx, k); err != nil {
				return err
			}
		case err != nil:
			// A connection that broke: try again from where it was, in a
			// moment.
			select {
			case <-ctx.Done():
				return nil
			case <-r.opts.Clock.After(time.Second):
			}
			rv = next
		default:
			rv = next
		}
	}
	return nil
}

func (r *Recorder) listOptions(k Kind) []client.ListOption {
	var opts []client.ListOption
	if k.Namespaced && r.opts.Namespace != "" {
		opts = append(opts, client.InNamespace(r.opts.Namespace))
	}
	if k.Workload && r.opts.Selector != nil && !r.opts.Selector.Empty() {
		opts = append(opts, client.MatchingLabelsSelector{Selector: r.opts.Selector})
	}
	if k.fields != nil {
		opts = append(opts, client.MatchingFieldsSelector{Selector: k.fields})
	}
	return opts
}

// list records a kind's objects a page at a time between OpSync and
// OpSynced, sorted by namespace and name within each page, and returns
// the list's resourceVersion.
func (r *Recorder) list(ctx context.Context, k Kind) (string, error) {
	if err := r.w.Write(Record{Time: r.opts.Clock.Now(), Op: OpSync, Kind: k.Name}); err != nil {
		return "", err
	}
	var rv, cont string
	for {
		list := k.newList()
		opts := append(r.listOptions(k), client.Limit(r.opts.PageSize))
		if cont != "" {
			opts = append(opts, client.Continue(cont))
		}
		if err := r.c.List(ctx, list, opts...); err != nil {
			return "", err
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			return "", err
		}
		sort.Slice(items, func(i, j int) bool { return objKey(items[i]) < objKey(items[j]) })
		now := r.opts.Clock.Now()
		for _, o := range items {
			if k.keep != nil && !k.keep(o) {
				continue
			}
			if err := r.w.Object(now, OpAdd, k.Name, Sanitize(o)); err != nil {
				return "", err
			}
		}
		rv, cont = list.GetResourceVersion(), list.GetContinue()
		if cont == "" {
			break
		}
	}
	return rv, r.w.Write(Record{Time: r.opts.Clock.Now(), Op: OpSynced, Kind: k.Name})
}

func objKey(o runtime.Object) string {
	a, err := meta.Accessor(o)
	if err != nil {
		return ""
	}
	return a.GetNamespace() + "/" + a.GetName()
}

// follow records a watch of the kind from rv until it ends; it returns the
// last resourceVersion seen, the API server's words when rv has expired
// (a gap), or the error that broke the connection.
func (r *Recorder) follow(ctx context.Context, k Kind, rv string) (last, gone string, err error) {
	last = rv
	opts := append(r.listOptions(k), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true}})
	w, err := r.c.Watch(ctx, k.newList(), opts...)
	if err != nil {
		if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
			return last, err.Error(), nil
		}
		return last, "", err
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return last, "", nil
		case ev, ok := <-w.ResultChan():
			if !ok {
				return last, "", nil // the server ended the watch: resume at last
			}
			switch ev.Type {
			case watch.Error:
				status, _ := ev.Object.(*metav1.Status)
				if status != nil && (status.Code == http.StatusGone || status.Reason == metav1.StatusReasonExpired) {
					return last, status.Message, nil
				}
				return last, "", fmt.Errorf("watch: %v", apierrors.FromObject(ev.Object))
			case watch.Bookmark:
				if a, err := meta.Accessor(ev.Object); err == nil {
					last = a.GetResourceVersion()
				}
			case watch.Added, watch.Modified, watch.Deleted:
				op := map[watch.EventType]Op{watch.Added: OpAdd, watch.Modified: OpUpdate, watch.Deleted: OpDelete}[ev.Type]
				if k.keep == nil || k.keep(ev.Object) { // one not kept still moves the resourceVersion on
					if err := r.w.Object(r.opts.Clock.Now(), op, k.Name, Sanitize(ev.Object)); err != nil {
						return last, "", err
					}
				}
				if a, err := meta.Accessor(ev.Object); err == nil {
					last = a.GetResourceVersion()
				}
			}
		}
	}
}
