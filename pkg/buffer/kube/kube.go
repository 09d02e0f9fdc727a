// Package kube resolves CapacityBuffers against an API server: the
// PodTemplates and workloads they name, read through a client.Reader.
package kube

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joiner-autoscaler/joiner/pkg/buffer"
)

// Lookup finds what a buffer names through r (a live cluster, or a
// controller's cache).
func Lookup(ctx context.Context, r client.Reader) buffer.Lookup {
	return func(kind, namespace, name string) (*buffer.Target, error) {
		var obj client.Object
		switch kind {
		case "PodTemplate":
			obj = &corev1.PodTemplate{}
		case "Deployment":
			obj = &appsv1.Deployment{}
		case "StatefulSet":
			obj = &appsv1.StatefulSet{}
		case "ReplicaSet":
			obj = &appsv1.ReplicaSet{}
		default:
			return nil, fmt.Errorf("unsupported kind %q", kind)
		}
		err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, obj)
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("%w: %s", buffer.ErrNotFound, err.Error())
		}
		if err != nil {
			return nil, err
		}
		t, _ := buffer.TargetOf(obj)
		return t, nil
	}
}
