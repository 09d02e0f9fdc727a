package aws

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/aws/fake"
)

// TestDescriberCoalescesConcurrentGets: the Gets asked for while a
// DescribeInstances is in flight are answered by one more call.
func TestDescriberCoalescesConcurrentGets(t *testing.T) {
	started, release := make(chan struct{}, 10), make(chan struct{})
	var mu sync.Mutex
	var calls [][]string
	d := newDescriber(func(_ context.Context, ids []string) (map[string]*ec2types.Instance, error) {
		mu.Lock()
		calls = append(calls, ids)
		mu.Unlock()
		started <- struct{}{}
		<-release
		out := map[string]*ec2types.Instance{}
		for _, id := range ids {
			if id != "i-unknown" {
				out[id] = &ec2types.Instance{InstanceId: aws.String(id)}
			}
		}
		return out, nil
	})
	ctx := context.Background()
	type res struct {
		id  string
		got *ec2types.Instance
		err error
	}
	results := make(chan res, 11)
	get := func(id string) {
		in, err := d.get(ctx, id)
		results <- res{id, in, err}
	}
	go get("i-0")
	<-started // the first call is in flight
	ids := []string{"i-unknown"}
	for i := 1; i <= 9; i++ {
		ids = append(ids, fmt.Sprintf("i-%d", i))
	}
	ids = append(ids, "i-1") // asked twice
	for _, id := range ids {
		go get(id)
	}
	for { // until all are queued behind the call in flight
		d.mu.Lock()
		n := len(d.pending)
		d.mu.Unlock()
		if n == len(ids) {
			break
		}
	}
	close(release)
	for range 1 + len(ids) {
		r := <-results
		switch {
		case r.err != nil:
			t.Errorf("%s: %v", r.id, r.err)
		case r.id == "i-unknown" && r.got != nil:
			t.Errorf("an unknown instance was found")
		case r.id != "i-unknown" && aws.ToString(r.got.InstanceId) != r.id:
			t.Errorf("get(%s) = %v", r.id, r.got)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(calls) != 2 {
		t.Fatalf("%d DescribeInstances calls for 11 Gets, want 2: %v", len(calls), calls)
	}
	second := slices.Clone(calls[1])
	slices.Sort(second)
	if len(second) != 10 || slices.Compact(second) == nil || len(slices.Compact(second)) != 10 {
		t.Errorf("second call asked for %v, want the 10 distinct IDs once each", calls[1])
	}
}

func TestInstanceID(t *testing.T) {
	for _, tt := range []struct {
		providerID, want string
		ok               bool
	}{
		{"aws:///us-east-1a/i-0123456789abcdef0", "i-0123456789abcdef0", true},
		{"aws:///i-0abc", "", false},
		{"kwok://node-1", "", false},
		{"aws:///us-east-1a/", "", false},
	} {
		got, err := instanceID(tt.providerID)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("instanceID(%q) = %q, %v; want %q, ok %v", tt.providerID, got, err, tt.want, tt.ok)
		}
	}
}

// TestGetListDelete: Get and List read instances back as claims; List
// keeps to this cluster's live ones; Delete terminates, and then the
// instance is not found.
func TestGetListDelete(t *testing.T) {
	e := newEnv(t, seedNodeClass(t))
	launched, err := e.p.Create(e.ctx, claim("c1", "default", threeTypes, onDemand))
	if err != nil {
		t.Fatal(err)
	}
	in := e.aws.Instances()[0]
	got, err := e.p.Get(e.ctx, launched.Status.ProviderID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "c1" || got.Status.ProviderID != launched.Status.ProviderID || got.Status.ImageID != in.ImageID {
		t.Errorf("Get = %s %s %s, want c1 %s %s", got.Name, got.Status.ProviderID, got.Status.ImageID, launched.Status.ProviderID, in.ImageID)
	}
	for _, k := range []string{v1.LabelInstanceType, v1.LabelZone, v1.LabelCapacityType, v1.LabelArch, v1.LabelNodePool} {
		if got.Labels[k] != launched.Labels[k] {
			t.Errorf("Get: label %s = %q, launched %q", k, got.Labels[k], launched.Labels[k])
		}
	}
	if d := got.CreationTimestamp.Sub(in.LaunchTime); d < -time.Second || d > time.Second {
		t.Errorf("creation %v, launch time %v", got.CreationTimestamp, in.LaunchTime)
	}
	if !got.Status.Capacity.Cpu().Equal(*launched.Status.Capacity.Cpu()) {
		t.Errorf("Get: capacity %v, launched %v", got.Status.Capacity, launched.Status.Capacity)
	}

	ours := map[string]string{"karpenter.sh/managed-by": "production", "kubernetes.io/cluster/production": "owned", "karpenter.sh/nodepool": "general"}
	orphan := e.aws.AddInstance(fake.Instance{InstanceType: "m5.large", Zone: "us-east-1b", SubnetID: fake.StandardSubnetPrefix + "b", Tags: ours})
	e.aws.AddInstance(fake.Instance{InstanceType: "m5.large", Zone: "us-east-1b", SubnetID: fake.StandardSubnetPrefix + "b",
		Tags: map[string]string{"karpenter.sh/managed-by": "staging", "kubernetes.io/cluster/staging": "owned"}})
	e.aws.AddInstance(fake.Instance{InstanceType: "m5.large", Zone: "us-east-1b", SubnetID: fake.StandardSubnetPrefix + "b"})
	listed := func() []string {
		all, err := e.p.List(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, nc := range all {
			ids = append(ids, nc.Status.ProviderID)
		}
		slices.Sort(ids)
		return ids
	}
	orphanID := ProviderIDPrefix + "us-east-1b/" + orphan
	want := []string{launched.Status.ProviderID, orphanID}
	slices.Sort(want)
	if got := listed(); !slices.Equal(got, want) {
		t.Errorf("List = %v, want %v", got, want)
	}

	if err := e.p.Delete(e.ctx, launched); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if n := e.calls("TerminateInstances"); n != 1 {
		t.Errorf("%d TerminateInstances calls, want 1", n)
	}
	if _, err := e.p.Get(e.ctx, launched.Status.ProviderID); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Errorf("Get after Delete: %v, want NodeClaimNotFound", err)
	}
	if err := e.p.Delete(e.ctx, launched); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Errorf("Delete again: %v, want NodeClaimNotFound", err)
	}
	if got := listed(); !slices.Equal(got, []string{orphanID}) {
		t.Errorf("List after Delete = %v, want only the orphan", got)
	}
	if _, err := e.p.Get(e.ctx, ProviderIDPrefix+"us-east-1a/i-0000000000000dead"); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Errorf("Get of an unknown instance: %v, want NodeClaimNotFound", err)
	}
}

// TestTerminationsAreBatched: terminating many instances, one of them
// unknown to EC2, costs one TerminateInstances for the batch and one per
// ID after the batch failed — each known instance is terminated, the
// unknown one alone gets EC2's NotFound.
func TestTerminationsAreBatched(t *testing.T) {
	e := newEnv(t)
	tags := map[string]string{"kubernetes.io/cluster/production": "owned"}
	a := e.aws.AddInstance(fake.Instance{InstanceType: "m5.large", Zone: "us-east-1a", SubnetID: fake.StandardSubnetPrefix + "a", Tags: tags})
	b := e.aws.AddInstance(fake.Instance{InstanceType: "m5.large", Zone: "us-east-1b", SubnetID: fake.StandardSubnetPrefix + "b", Tags: tags})
	errs, err := e.p.terminateInstances(context.Background(), []string{a, "i-0000000000000dead", b})
	if err != nil {
		t.Fatal(err)
	}
	if errs[a] != nil || errs[b] != nil || !isCode(errs["i-0000000000000dead"], "InvalidInstanceID.NotFound") {
		t.Errorf("per-ID errors %v: want none for %s and %s, NotFound for the unknown one", errs, a, b)
	}
	for _, in := range e.aws.Instances() {
		if (in.ID == a || in.ID == b) && in.State != "shutting-down" && in.State != "terminated" {
			t.Errorf("instance %s is %s", in.ID, in.State)
		}
	}
	if n := e.calls("TerminateInstances"); n != 4 {
		t.Errorf("%d TerminateInstances calls, want 1 for the batch and 3 for its IDs one by one", n)
	}
	if errs, _ := e.p.terminateInstances(context.Background(), []string{a, b}); len(errs) != 0 || e.calls("TerminateInstances") != 5 {
		t.Errorf("terminating two known instances: errors %v after %d calls, want none after one more", errs, e.calls("TerminateInstances"))
	}
}
