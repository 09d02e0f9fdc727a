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
		if in != nil {
			if res := p.instanceReservation(in); res != nil {
				p.markTerminated(res.ID) // once: the controller asks no more after NotFound
			}
		}
		return cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("instance %s of nodeclaim %s is terminated", id, claim.Name))
	}
	termErr, err := p.terminator.get(ctx, id)
	if err == nil {
		err = termErr
	}

	if err != nil {
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
	reservationLabels(nc.Labels, p.instanceReservation(in))
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

// terminateInstances terminates instances by ID, each ID's error in the
// map. An unknown ID fails a TerminateInstances of many; those are
// terminated one by one then, so one gone instance does not hold back the
// others.
func (p *Provider) terminateInstances(ctx context.Context, ids []string) (map[string]error, error) {
	_, err := p.ec2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: ids})
	out := map[string]error{}
	if err == nil {
		return out, nil
	}
	if len(ids) == 1 || !isCode(err, "InvalidInstanceID.NotFound", "InvalidInstanceID.Malformed") {
		for _, id := range ids {
			out[id] = err
		}
		return out, nil
	}
	for _, id := range ids {
		one, _ := p.terminateInstances(ctx, []string{id})
		out[id] = one[id]
	}
	return out, nil
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

// batcher coalesces calls over instance IDs (DescribeInstances,
// TerminateInstances): the IDs asked for while a call is in flight go
// together into the next one, so many concurrent Gets and Deletes (the
// controller's liveness, termination and GC loops) cost a few calls, as
// upstream's batchers save them, without a timer to wait on.
type batcher[R any] struct {
	do func(ctx context.Context, ids []string) (map[string]R, error)

	mu      sync.Mutex
	pending []batchRequest[R]
	running bool
}

type batchRequest[R any] struct {
	id  string
	out chan batchResult[R]
}

type batchResult[R any] struct {
	value R
	err   error
}

// maxBatch is the most IDs one call asks for.
const maxBatch = 500

func newBatcher[R any](do func(ctx context.Context, ids []string) (map[string]R, error)) *batcher[R] {
	return &batcher[R]{do: do}
}

// newDescriber describes instances in batches; an instance EC2 does not
// know is nil.
func newDescriber(describe func(ctx context.Context, ids []string) (map[string]*ec2types.Instance, error)) *batcher[*ec2types.Instance] {
	return newBatcher(describe)
}

// get asks for one ID, in the next batch.
func (b *batcher[R]) get(ctx context.Context, id string) (R, error) {
	req := batchRequest[R]{id: id, out: make(chan batchResult[R], 1)}
	b.mu.Lock()
	b.pending = append(b.pending, req)
	if !b.running {
		b.running = true
		go b.run(context.WithoutCancel(ctx))
	}
	b.mu.Unlock()
	select {
	case r := <-req.out:
		return r.value, r.err
	case <-ctx.Done():
		var zero R
		return zero, ctx.Err()
	}
}

// run calls for what is pending, batch after batch, until nothing is.
func (b *batcher[R]) run(ctx context.Context) {
	for {
		b.mu.Lock()
		n := min(len(b.pending), maxBatch)
		batch := b.pending[:n:n]
		b.pending = b.pending[n:]
		if n == 0 {
			b.running = false
			b.pending = nil
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
		seen := map[string]bool{}
		var ids []string
		for _, r := range batch {
			if !seen[r.id] {
				seen[r.id] = true
				ids = append(ids, r.id)
			}
		}
		found, err := b.do(ctx, ids)
		for _, r := range batch {
			r.out <- batchResult[R]{value: found[r.id], err: err}
		}
	}
}
