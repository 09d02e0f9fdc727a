package provisioning

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/joiner-autoscaler/joiner/pkg/objcache"
)

// nodeKey is a node's content key: its name and Version.
type nodeKey struct{ name, version string }

func nodeKeyOf(n *Node) (nodeKey, bool) { return nodeKey{n.Name, n.Version}, n.Version != "" }

type (
	nodeCache[V any] = objcache.Cache[*Node, nodeKey, V]
	podCache[V any]  = objcache.Cache[*corev1.Pod, objcache.PodKey, V]
)

func newNodeCache[V any](limit int) *nodeCache[V] {
	return objcache.New[*Node, nodeKey, V](nodeKeyOf, limit)
}

func newPodCache[V any](limit int) *podCache[V] { return objcache.NewPodCache[V](limit) }

// derivedPod is a copy of pod to change; see objcache.DerivedPod.
func derivedPod(pod *corev1.Pod) *corev1.Pod { return objcache.DerivedPod(pod) }
