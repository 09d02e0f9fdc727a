package aws

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
)

func spotWarning(id, instance string) string {
	return fmt.Sprintf(`{"version":"0","id":%q,"detail-type":"EC2 Spot Instance Interruption Warning","source":"aws.ec2","region":"us-east-1",`+
		`"detail":{"instance-id":%q,"instance-action":"terminate"}}`, id, instance)
}

// TestInterruptionMessages: a spot interruption warning about one of the
// cluster's instances becomes an Interruption whose Handled deletes the
// message, and leaves the spot offering out of launches; a message about
// an instance the cluster does not own is deleted without one.
func TestInterruptionMessages(t *testing.T) {
	e := newEnvWith(t, envOptions{queue: "production"}, seedNodeClass(t))
	spot := req(v1.LabelCapacityType, corev1.NodeSelectorOpIn, v1.CapacityTypeSpot)
	launched, err := e.p.Create(e.ctx, claim("c1", "default", threeTypes, spot))
	if err != nil {
		t.Fatal(err)
	}
	in := e.aws.Instances()[0]
	url := e.aws.CreateQueue("production")
	notOurs := spotWarning("evt-1", "i-0000000000000beef")
	ours := spotWarning("evt-2", in.ID)
	e.aws.SendMessage(url, notOurs)
	e.aws.SendMessage(url, ours)

	ctx, cancel := context.WithCancel(e.ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := e.p.Run(ctx); err != nil {
			t.Error(err)
		}
	}()
	defer func() { cancel(); wg.Wait() }()

	got := <-e.p.Interruptions()
	if got.ProviderID != launched.Status.ProviderID || got.Kind != cloudprovider.SpotInterruption || got.Handled == nil {
		t.Fatalf("interruption %+v, want a SpotInterruption of %s with Handled", got, launched.Status.ProviderID)
	}
	// The other message went at once; this one waits for Handled.
	if msgs := e.aws.QueueMessages(url); !slices.Equal(msgs, []string{ours}) {
		t.Errorf("queue before Handled: %q, want only the message about our instance", msgs)
	}
	its, err := e.p.GetInstanceTypes(e.ctx, nodePool("default"))
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range its {
		for _, o := range it.Offerings {
			if it.Name == in.InstanceType && o.Zone == in.Zone && o.CapacityType == v1.CapacityTypeSpot && o.Available {
				t.Errorf("the interrupted offering %s spot in %s is still available", it.Name, o.Zone)
			}
		}
	}
	got.Handled()
	got.Handled() // at most once
	if msgs := e.aws.QueueMessages(url); len(msgs) != 0 {
		t.Errorf("queue after Handled: %q, want empty", msgs)
	}
	if n := e.calls("DeleteMessage"); n != 2 {
		t.Errorf("%d DeleteMessage calls, want 2", n)
	}
}

// TestScheduledChangeOfTwoInstances: one Interruption each; the message
// is deleted once both are Handled. No offering is left out for it.
func TestScheduledChangeOfTwoInstances(t *testing.T) {
	e := newEnvWith(t, envOptions{queue: "production"}, seedNodeClass(t))
	var ids, providerIDs []string
	for i := range 2 {
		nc, err := e.p.Create(e.ctx, claim(fmt.Sprintf("c%d", i), "default", threeTypes, onDemand))
		if err != nil {
			t.Fatal(err)
		}
		providerIDs = append(providerIDs, nc.Status.ProviderID)
	}
	for _, in := range e.aws.Instances() {
		ids = append(ids, in.ID)
	}
	url := e.aws.CreateQueue("production")
	body := fmt.Sprintf(`{"version":"0","id":"evt-3","detail-type":"AWS Health Event","source":"aws.health","detail":{"service":"EC2",`+
		`"eventTypeCategory":"scheduledChange","eventTypeCode":"AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED",`+
		`"affectedEntities":[{"entityValue":%q},{"entityValue":%q}]}}`, ids[0], ids[1])
	e.aws.SendMessage(url, body)
	ctx, cancel := context.WithCancel(e.ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = e.p.Run(ctx)
	}()
	defer func() { cancel(); wg.Wait() }()
	first, second := <-e.p.Interruptions(), <-e.p.Interruptions()
	got := []string{first.ProviderID, second.ProviderID}
	slices.Sort(got)
	slices.Sort(providerIDs)
	if !slices.Equal(got, providerIDs) || first.Kind != cloudprovider.ScheduledChange {
		t.Fatalf("interruptions of %v (%s), want of %v, ScheduledChange", got, first.Kind, providerIDs)
	}
	first.Handled()
	if msgs := e.aws.QueueMessages(url); len(msgs) != 1 {
		t.Errorf("the message went after one of two was handled")
	}
	second.Handled()
	if msgs := e.aws.QueueMessages(url); len(msgs) != 0 {
		t.Errorf("the message is still there after both were handled")
	}
	if e.p.unavailable.IsUnavailable(e.aws.Instances()[0].InstanceType, e.aws.Instances()[0].Zone, v1.CapacityTypeOnDemand) {
		t.Error("a scheduled change left an offering out")
	}
}
