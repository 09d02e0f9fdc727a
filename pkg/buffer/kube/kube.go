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
		key := client.ObjectKey{Namespace: namespace, Name: name}
		var err error
		var t buffer.Target
		switch kind {
		case "PodTemplate":
			var o corev1.PodTemplate
			if err = r.Get(ctx, key, &o); err == nil {
				g := o.Generation
				t = buffer.Target{Template: o.Template, Generation: &g}
			}
		case "Deployment":
			var o appsv1.Deployment
			if err = r.Get(ctx, key, &o); err == nil {
				t = buffer.Target{Template: o.Spec.Template, Replicas: o.Spec.Replicas}
			}
		case "StatefulSet":
			var o appsv1.StatefulSet
			if err = r.Get(ctx, key, &o); err == nil {
				t = buffer.Target{Template: o.Spec.Template, Replicas: o.Spec.Replicas}
			}
		case "ReplicaSet":
			var o appsv1.ReplicaSet
			if err = r.Get(ctx, key, &o); err == nil {
				t = buffer.Target{Template: o.Spec.Template, Replicas: o.Spec.Replicas}
			}
		default:
			return nil, fmt.Errorf("unsupported kind %q", kind)
		}
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("%w: %s", buffer.ErrNotFound, err.Error())
		}
		if err != nil {
			return nil, err
		}
		return &t, nil
	}
}
