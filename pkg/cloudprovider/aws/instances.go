package aws

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/joiner-autoscaler/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
)

// liveStates are the instance states List returns: all but terminated.
var liveStates = []string{"pending", "running", "stopping", "stopped", "shutting-down"}

// instanceID is the EC2 ID in a provider ID (aws:///<zone>/<id>).
func instanceID(providerID string) (string, error) {
	rest, ok := strings.CutPrefix(providerID, ProviderIDPrefix)
	i := strings.LastIndex(rest, "/")
	if !ok || i < 0 || !strings.HasPrefix(rest[i+1:], "i-") {
		return "", fmt.Errorf("provider ID %q is not %s<zone>/<instance-id>", providerID, ProviderIDPrefix)
	}
	return rest[i+1:], nil
}

// Get returns the claim of a live instance, or a NodeClaimNotFoundError
// for one terminated or unknown. Concurrent Gets share DescribeInstances
// calls (see describer).
func (p *Provider) Get(ctx context.Context, providerID string) (*v1.NodeClaim, error) {
	id, err := instanceID(providerID)
	if err != nil {
		return nil, err
	}
	in, err := p.describer.get(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("describing instance %s: %w", id, err)
	}
	if in == nil || in.State == nil || in.State.Name == ec2types.InstanceStateNameTerminated {
		return nil, cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("instance %s is terminated or unknown", id))
	}
	return p.instanceClaim(ctx, in), nil
}

// List returns a claim for every instance this cluster's provider
// launched that is not terminated.
func (p *Provider) List(ctx context.Context) ([]*v1.NodeClaim, error) {
	pages := ec2.NewDescribeInstancesPaginator(p.ec2, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
		filter("tag:"+tagManagedBy, p.opts.ClusterName),
		filter("tag-key", "kubernetes.io/cluster/"+p.opts.ClusterName),
		{Name: aws.String("instance-state-name"), Values: liveStates},
	}})
	var out []*v1.NodeClaim
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("listing instances: %w", err)
		}
		for _, r := range page.Reservations {
			for i := range r.Instances {
				out = append(out, p.instanceClaim(ctx, &r.Instances[i]))
			}
		}
	}
	return out, nil
}

// Delete terminates the claim's instance; once it is terminated (or
// unknown) the error is a NodeClaimNotFoundError.
func (p *Provider) Delete(ctx context.Context, claim *v1.NodeClaim) error {
	id, err := instanceID(claim.Status.ProviderID)
	if err != nil {
		return err
	}
	in, err := p.describer.get(ctx, id)
	if err != nil {
		return fmt.Errorf("describing instance %s of nodeclaim %s: %w", id, claim.Name, err)
	}
	if in == nil || in.State == nil || in.State.Name == ec2types.InstanceStateNameTerminated {
		return cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("instance %s of nodeclaim %s is terminated", id, claim.Name))
	}
	if _, err := p.ec2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}}); err != nil {
		if isCode(err, "InvalidInstanceID.NotFound") {
			return cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("instance %s of nodeclaim %s: %w", id, claim.Name, err))
		}
		return fmt.Errorf("terminating instance %s of nodeclaim %s: %w", id, claim.Name, err)
	}
	return nil
}

// instanceClaim is the claim an instance stands for: its provider ID,
// image, launch time, its type's labels, capacity and allocatable, its
// zone and capacity type, its NodePool and NodeClaim by its tags.
func (p *Provider) instanceClaim(ctx context.Context, in *ec2types.Instance) *v1.NodeClaim {
	tags := map[string]string{}
	for _, t := range in.Tags {
		tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	var zone string
	if in.Placement != nil {
		zone = aws.ToString(in.Placement.AvailabilityZone)
	}
	nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: tags[tagNodeClaim], Labels: map[string]string{}}}
	if in.LaunchTime != nil {
		nc.CreationTimestamp = metav1.NewTime(*in.LaunchTime)
	}
	if it := p.typeNamed(ctx, string(in.InstanceType), zone); it != nil {
		maps.Copy(nc.Labels, it.Requirements.Labels())
		nc.Status.Capacity = it.Capacity.DeepCopy()
		nc.Status.Allocatable = it.Allocatable()
	}
	capacityType := v1.CapacityTypeOnDemand
	if in.InstanceLifecycle == ec2types.InstanceLifecycleTypeSpot {
		capacityType = v1.CapacityTypeSpot
	}
	nc.Labels[v1.LabelInstanceType] = string(in.InstanceType)
	nc.Labels[v1.LabelZone] = zone
	nc.Labels[v1.LabelCapacityType] = capacityType
	if pool := tags[v1.LabelNodePool]; pool != "" {
		nc.Labels[v1.LabelNodePool] = pool
	}
	if class := tags[awsv1.LabelNodeClass]; class != "" {
		nc.Labels[awsv1.LabelNodeClass] = class
	}
	nc.Status.ProviderID = ProviderIDPrefix + zone + "/" + aws.ToString(in.InstanceId)
	nc.Status.ImageID = aws.ToString(in.ImageId)
	return nc
}

// typeNamed is an instance type's facts, as last listed (or listed now).
func (p *Provider) typeNamed(ctx context.Context, name, zone string) *cloudprovider.InstanceType {
	p.mu.Lock()
	it := p.typeInfo[name]
	p.mu.Unlock()
	if it != nil {
		return it
	}
	its, err := p.types.List(ctx, []string{zone})
	if err != nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, t := range its {
		if _, ok := p.typeInfo[t.Name]; !ok {
			p.typeInfo[t.Name] = t
		}
	}
	return p.typeInfo[name]
}

// describeInstances describes instances by ID. An unknown ID fails a
// DescribeInstances of many; those are described one by one then.
func (p *Provider) describeInstances(ctx context.Context, ids []string) (map[string]*ec2types.Instance, error) {
	out := map[string]*ec2types.Instance{}
	pages := ec2.NewDescribeInstancesPaginator(p.ec2, &ec2.DescribeInstancesInput{InstanceIds: ids})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if isCode(err, "InvalidInstanceID.NotFound", "InvalidInstanceID.Malformed") {
			if len(ids) == 1 {
				return out, nil
			}
			for _, id := range ids {
				one, err := p.describeInstances(ctx, []string{id})
				if err != nil {
					return nil, err
				}
				maps.Copy(out, one)
			}
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		for _, r := range page.Reservations {
			for i := range r.Instances {
				out[aws.ToString(r.Instances[i].InstanceId)] = &r.Instances[i]
			}
		}
	}
	return out, nil
}

// describer coalesces DescribeInstances calls: the IDs asked for while a
// call is in flight are described together by the next one, so many
// concurrent Gets (the controller's liveness and GC loops) cost a few
// calls, as upstream's batcher saves them, without a timer to wait on.
type describer struct {
	describe func(ctx context.Context, ids []string) (map[string]*ec2types.Instance, error)

	mu      sync.Mutex
	pending []describeRequest
	running bool
}

type describeRequest struct {
	id  string
	out chan describeResult
}

type describeResult struct {
	instance *ec2types.Instance
	err      error
}

// maxDescribeBatch is the most IDs one DescribeInstances asks for.
const maxDescribeBatch = 500

func newDescriber(describe func(ctx context.Context, ids []string) (map[string]*ec2types.Instance, error)) *describer {
	return &describer{describe: describe}
}

// get describes one instance; nil when EC2 does not know it.
func (d *describer) get(ctx context.Context, id string) (*ec2types.Instance, error) {
	req := describeRequest{id: id, out: make(chan describeResult, 1)}
	d.mu.Lock()
	d.pending = append(d.pending, req)
	if !d.running {
		d.running = true
		go d.run(context.WithoutCancel(ctx))
	}
	d.mu.Unlock()
	select {
	case r := <-req.out:
		return r.instance, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// run describes what is pending, batch after batch, until nothing is.
func (d *describer) run(ctx context.Context) {
	for {
		d.mu.Lock()
		n := min(len(d.pending), maxDescribeBatch)
		batch := d.pending[:n:n]
		d.pending = d.pending[n:]
		if n == 0 {
			d.running = false
			d.pending = nil
			d.mu.Unlock()
			return
		}
		d.mu.Unlock()
		seen := map[string]bool{}
		var ids []string
		for _, r := range batch {
			if !seen[r.id] {
				seen[r.id] = true
				ids = append(ids, r.id)
			}
		}
		found, err := d.describe(ctx, ids)
		for _, r := range batch {
			r.out <- describeResult{instance: found[r.id], err: err}
		}
	}
}
