package aws

import (
	"context"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	awsv1 "github.com/joiner-autoscaler/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
)

// The drift reasons, as upstream names them.
const (
	DriftAMI           cloudprovider.DriftReason = "AMIDrift"
	DriftSubnet        cloudprovider.DriftReason = "SubnetDrift"
	DriftSecurityGroup cloudprovider.DriftReason = "SecurityGroupDrift"
	// DriftCapacityReservation: the instance runs in a capacity
	// reservation its NodeClass no longer selects (ReservedCapacity gate).
	DriftCapacityReservation cloudprovider.DriftReason = "CapacityReservationDrift"
)

// IsDrifted reports why the claim's instance no longer matches its
// NodeClass as it resolves now: its AMI is no longer selected, its subnet
// no longer selected, or its security groups differ from the selected
// ones, or it runs in a capacity reservation the NodeClass no longer
// selects (upstream checks this per instance rather than by offering: a
// reserved instance may have fallen back to on-demand).
func (p *Provider) IsDrifted(ctx context.Context, claim *v1.NodeClaim) (cloudprovider.DriftReason, error) {
	r, err := p.nodeClass(ctx, claim.Spec.NodeClassRef)
	if err != nil {
		return "", err
	}
	id, err := instanceID(claim.Status.ProviderID)
	if err != nil {
		return "", err
	}
	in, err := p.describer.get(ctx, id)
	if err != nil {
		return "", fmt.Errorf("describing instance %s of nodeclaim %s: %w", id, claim.Name, err)
	}
	if in == nil || in.State == nil || in.State.Name == ec2types.InstanceStateNameTerminated {
		return "", cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("instance %s of nodeclaim %s is terminated", id, claim.Name))
	}
	if reason := drifted(r, in); reason != "" {
		return reason, nil
	}
	if res := p.instanceReservation(in); res != nil && !slices.ContainsFunc(r.status.CapacityReservations, func(cr awsv1.CapacityReservation) bool { return cr.ID == res.ID }) {
		return DriftCapacityReservation, nil
	}
	return "", nil
}

func drifted(r *resolvedClass, in *ec2types.Instance) cloudprovider.DriftReason {
	if !slices.ContainsFunc(r.status.AMIs, func(a awsv1.AMI) bool { return a.ID == aws.ToString(in.ImageId) }) {
		return DriftAMI
	}
	if !slices.ContainsFunc(r.status.Subnets, func(s awsv1.Subnet) bool { return s.ID == aws.ToString(in.SubnetId) }) {
		return DriftSubnet
	}
	var have, want []string
	for _, g := range in.SecurityGroups {
		have = append(have, aws.ToString(g.GroupId))
	}
	for _, g := range r.status.SecurityGroups {
		want = append(want, g.ID)
	}
	slices.Sort(have)
	slices.Sort(want)
	if !slices.Equal(slices.Compact(have), slices.Compact(want)) {
		return DriftSecurityGroup
	}
	return ""
}
