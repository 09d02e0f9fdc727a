package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
)

// demoteEvery is how often reserved claims are checked against the cloud
// (upstream's capacity-type controller requeues every minute).
const demoteEvery = time.Minute

// reservationDemoter relabels a claim and its Node from reserved to
// on-demand once the cloud says the instance runs on-demand — its
// On-Demand Capacity Reservation ended, was cancelled, or the instance
// was moved out of it — as upstream's capacity-type controller does. A
// claim is never promoted. It lists the cloud's instances only while some
// claim is labelled reserved.
type reservationDemoter struct {
	gate   *syncGate
	client client.Client
	cloud  CloudProvider
	clock  clock.WithTicker
}

func (d *reservationDemoter) loop(ctx context.Context) error {
	return every(ctx, d.gate, d.clock, demoteEvery, "demoting claims whose reservation ended", d.demote)
}

func (d *reservationDemoter) demote(ctx context.Context) error {
	if !d.gate.synced() {
		return ErrNotSynced
	}
	var claims v1.NodeClaimList
	if err := d.client.List(ctx, &claims, client.MatchingLabels{v1.LabelCapacityType: v1.CapacityTypeReserved}); err != nil {
		return err
	}
	if len(claims.Items) == 0 {
		return nil
	}
	ctx = withController(ctx, "nodeclaim.capacitytype")
	instances, err := d.cloud.List(ctx)
	if err != nil {
		return fmt.Errorf("listing instances: %w", err)
	}
	capacityType := map[string]string{}
	for _, in := range instances {
		capacityType[in.Status.ProviderID] = in.Labels[v1.LabelCapacityType]
	}
	var errs []error
	for i := range claims.Items {
		nc := &claims.Items[i]
		ct, known := capacityType[nc.Status.ProviderID]
		if !known || ct == "" || ct == v1.CapacityTypeReserved || !nc.DeletionTimestamp.IsZero() {
			continue
		}
		log.FromContext(ctx).Info("demoting a NodeClaim whose capacity reservation ended", "nodeclaim", nc.Name, "capacityType", ct)
		if err := relabel(ctx, d.client, nc, ct); err != nil {
			errs = append(errs, err)
			continue
		}
		if nc.Status.NodeName == "" {
			continue // upstream leaves a Node not registered yet alone
		}
		var node corev1.Node
		if err := d.client.Get(ctx, client.ObjectKey{Name: nc.Status.NodeName}, &node); err != nil {
			errs = append(errs, client.IgnoreNotFound(err))
			continue
		}
		if err := relabel(ctx, d.client, &node, ct); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// relabel sets the object's capacity type and drops its reservation
// labels (upstream drops the ID and type; the interruptible label goes
// too, as it says nothing of an on-demand instance).
func relabel(ctx context.Context, c client.Client, obj client.Object, capacityType string) error {
	patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[v1.LabelCapacityType] = capacityType
	for _, k := range []string{cloudprovider.ReservationIDLabel, cloudprovider.ReservationTypeLabel, cloudprovider.ReservationInterruptibleLabel} {
		delete(labels, k)
	}
	obj.SetLabels(labels)
	return client.IgnoreNotFound(c.Patch(ctx, obj, patch))
}
