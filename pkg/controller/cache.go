package controller

import (
	"context"
	"io"
	"net/http"
	"net/http/pprof"
	"os"
	"reflect"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CacheOptions are the informer cache options the controller runs with:
// every object without its managedFields (the API server's bookkeeping,
// a kilobyte or more per object, never read here), and pods without what
// no decision reads — their containers' environment, commands, arguments,
// probes and lifecycle hooks, their statuses' images, IDs and last
// states, and the messages of the pod's conditions. What scheduling reads
// stays: requests and limits, ports, volumes, selectors, affinities,
// tolerations, spread, priority, owners, annotations and labels, the
// phase, conditions and containers' states and resources. The controller never
// writes a pod back (it evicts through the eviction subresource), and the
// objects it updates (Nodes, NodeClaims, NodePools) lose only their
// managedFields, which an update without them leaves as they are.
//
// A watch that breaks is logged as client-go logs it and told to breaks
// (nil: to no one), which Options.WatchBreaks hands to the controller.
func CacheOptions(breaks *WatchBreaks) cache.Options {
	return cache.Options{
		DefaultTransform:         cache.TransformStripManagedFields(),
		ByObject:                 map[client.Object]cache.ByObject{&corev1.Pod{}: {Transform: TrimPod}},
		DefaultWatchErrorHandler: breaks.handle,
	}
}

// WatchBreaks carries word of a broken informer watch from the cache,
// made before the controller, to the controller. The informer relists
// after a backoff (0.8 to 1.6 s), and until then the Store hears nothing
// of its kind: a burst of pending pods seems to have stopped, and a
// provisioning batch that closed then would plan for the pods seen so far
// and launch again for the rest — small nodes apart from those that hold
// the burst, consolidated later (seen on the scale benchmark's 1,000-pod
// scale-out). So the batch is held open: after a break of the pods' watch
// until the next pod event (see storeFeed.podRelisted), after another
// kind's until its relist has had time to come (relistWait).
type WatchBreaks struct {
	hook atomic.Pointer[func(kind string)]
}

// relistWait is how long a batch stays open after a watch other than the
// pods' broke: client-go's longest first backoff, and a relist.
const relistWait = 2 * time.Second

// podsKind is the pods' informer's type, as its Reflector describes it.
var podsKind = reflect.TypeFor[*corev1.Pod]().String()

func (w *WatchBreaks) handle(ctx context.Context, r *toolscache.Reflector, err error) {
	toolscache.DefaultWatchErrorHandler(ctx, r, err)
	if w == nil {
		return
	}
	if f := w.hook.Load(); f != nil {
		(*f)(r.TypeDescription())
	}
}

// on makes f what a broken watch calls, with the informer's type ("*v1.Pod").
func (w *WatchBreaks) on(f func(kind string)) {
	if w != nil {
		w.hook.Store(&f)
	}
}

// TrimPod is CacheOptions' transform of a pod (anything else is returned
// as it is).
func TrimPod(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	p.ManagedFields = nil
	for i := range p.Spec.InitContainers {
		trimContainer(&p.Spec.InitContainers[i])
	}
	for i := range p.Spec.Containers {
		trimContainer(&p.Spec.Containers[i])
	}
	for i := range p.Spec.EphemeralContainers {
		trimContainer((*corev1.Container)(&p.Spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
	for i := range p.Status.Conditions {
		p.Status.Conditions[i].Message = "" // kube-scheduler's "0/102 nodes are available: …"
	}
	for _, statuses := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses, p.Status.EphemeralContainerStatuses} {
		for i := range statuses {
			trimStatus(&statuses[i])
		}
	}
	return p, nil
}

// trimStatus keeps of a container's status what a decision may read: its
// name, readiness, restarts, state and resources (an in-place resize).
func trimStatus(cs *corev1.ContainerStatus) {
	cs.Image, cs.ImageID, cs.ContainerID = "", "", ""
	cs.LastTerminationState = corev1.ContainerState{}
	cs.VolumeMounts, cs.User, cs.AllocatedResourcesStatus = nil, nil, nil
	if w := cs.State.Waiting; w != nil {
		w.Message = ""
	}
	if t := cs.State.Terminated; t != nil {
		t.Message = ""
	}
}

func trimContainer(c *corev1.Container) {
	c.Env, c.EnvFrom, c.Command, c.Args = nil, nil, nil, nil
	c.LivenessProbe, c.ReadinessProbe, c.StartupProbe, c.Lifecycle = nil, nil, nil, nil
}

// ProfilingHandlers are Go's pprof endpoints under /debug/pprof/, for the
// metrics server with --enable-profiling (upstream's flag): heap, CPU,
// goroutines; and /debug/heapdump (HeapDump). Off by default, as
// upstream's.
func ProfilingHandlers() map[string]http.Handler {
	return map[string]http.Handler{
		"/debug/heapdump":      http.HandlerFunc(HeapDump),
		"/debug/pprof/":        http.HandlerFunc(pprof.Index),
		"/debug/pprof/cmdline": http.HandlerFunc(pprof.Cmdline),
		"/debug/pprof/profile": http.HandlerFunc(pprof.Profile),
		"/debug/pprof/symbol":  http.HandlerFunc(pprof.Symbol),
		"/debug/pprof/trace":   http.HandlerFunc(pprof.Trace),
	}
}

// HeapDump serves the process's heap dump (runtime/debug.WriteHeapDump,
// after a GC): every object with its contents, every goroutine's frames,
// the data segments. A heap profile says where the live objects were
// allocated; a dump also says what holds them, which hack/heapdump reads
// out (docs/scale.md, session 33). Started with GODEBUG=memprofilerate=1,
// the process records every allocation's site, which the dump carries.
// The world stops while the dump is written (a second or so at 100 MB).
func HeapDump(w http.ResponseWriter, _ *http.Request) {
	f, err := os.CreateTemp("", "joiner-heapdump-*")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	defer func() { _ = os.Remove(f.Name()) }()
	defer func() { _ = f.Close() }()
	runtime.GC()
	debug.WriteHeapDump(f.Fd())
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	_, _ = io.Copy(w, f)
}
