package interruption_test

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/aws/fake"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/aws/interruption"
)

func event(id, source, detailType, detail string) string {
	return fmt.Sprintf(`{"version":"0","id":%q,"detail-type":%q,"source":%q,"account":"123456789012","time":"2026-12-03T08:00:00Z","region":"us-east-1","resources":[],"detail":%s}`,
		id, detailType, source, detail)
}

// The four kinds, and messages that are none of them.
var (
	valid = map[string]string{
		"spot":        event("e-spot", "aws.ec2", "EC2 Spot Instance Interruption Warning", `{"instance-id":"i-01","instance-action":"terminate"}`),
		"rebalance":   event("e-rebalance", "aws.ec2", "EC2 Instance Rebalance Recommendation", `{"instance-id":"i-02"}`),
		"scheduled":   event("e-scheduled", "aws.health", "AWS Health Event", `{"service":"EC2","eventTypeCategory":"scheduledChange","eventTypeCode":"AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED","affectedEntities":[{"entityValue":"i-03"},{"entityValue":"i-04"}]}`),
		"stopping":    event("e-stopping", "aws.ec2", "EC2 Instance State-change Notification", `{"instance-id":"i-05","state":"stopping"}`),
		"terminating": event("e-terminated", "aws.ec2", "EC2 Instance State-change Notification", `{"instance-id":"i-06","state":"terminated"}`),
	}
	junk = []string{
		"not json",
		event("e-running", "aws.ec2", "EC2 Instance State-change Notification", `{"instance-id":"i-07","state":"running"}`),
		event("e-rds", "aws.health", "AWS Health Event", `{"service":"RDS","eventTypeCategory":"scheduledChange","affectedEntities":[{"entityValue":"db-1"}]}`),
	}
	wantValid = []interruption.Message{
		{ID: "e-rebalance", Kind: cloudprovider.RebalanceRecommendation, InstanceIDs: []string{"i-02"}},
		{ID: "e-scheduled", Kind: cloudprovider.ScheduledChange, InstanceIDs: []string{"i-03", "i-04"}},
		{ID: "e-spot", Kind: cloudprovider.SpotInterruption, InstanceIDs: []string{"i-01"}},
		{ID: "e-stopping", Kind: cloudprovider.InstanceStopping, InstanceIDs: []string{"i-05"}},
		{ID: "e-terminated", Kind: cloudprovider.InstanceTerminating, InstanceIDs: []string{"i-06"}},
	}
)

// withoutReceipts sorts the messages by ID and clears receipt handles
// (the fake's, different on every receive), checking they were set.
func withoutReceipts(t *testing.T, msgs []interruption.Message) []interruption.Message {
	t.Helper()
	out := append([]interruption.Message(nil), msgs...)
	for i := range out {
		if out[i].ReceiptHandle == "" {
			t.Errorf("%s has no receipt handle", out[i].ID)
		}
		out[i].ReceiptHandle = ""
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func TestReceiveAndDelete(t *testing.T) {
	for _, by := range []string{"name", "url"} {
		t.Run("queue by "+by, func(t *testing.T) {
			clock := clocktesting.NewFakeClock(time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC))
			f := fake.New(fake.Options{Clock: clock})
			defer f.Close()
			url := f.CreateQueue("production")
			for _, body := range junk {
				f.SendMessage(url, body)
			}
			for _, body := range valid {
				f.SendMessage(url, body)
			}
			queue := "production"
			if by == "url" {
				queue = url
			}
			q := interruption.New(sqs.NewFromConfig(f.Config()), queue)
			ctx := context.Background()

			got, err := q.Receive(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if g := withoutReceipts(t, got); !reflect.DeepEqual(g, wantValid) {
				t.Errorf("received\n%+v\nwant\n%+v", g, wantValid)
			}
			if left := f.QueueMessages(url); len(left) != len(valid) {
				t.Errorf("%d messages left, want the %d interruptions (junk deleted at once): %q", len(left), len(valid), left)
			}

			// Received, not deleted: invisible until the visibility timeout
			// passes, then received again.
			if again, err := q.Receive(ctx); err != nil || len(again) != 0 {
				t.Errorf("received %d again at once (err %v), want none", len(again), err)
			}
			clock.Step(31 * time.Second)
			again, err := q.Receive(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if g := withoutReceipts(t, again); !reflect.DeepEqual(g, wantValid) {
				t.Errorf("after the visibility timeout received\n%+v\nwant\n%+v", g, wantValid)
			}
			for _, m := range again {
				if err := q.Delete(ctx, m); err != nil {
					t.Errorf("Delete %s: %v", m.ID, err)
				}
			}
			if left := f.QueueMessages(url); len(left) != 0 {
				t.Errorf("after Delete, %q left", left)
			}
			clock.Step(time.Minute)
			if after, err := q.Receive(ctx); err != nil || len(after) != 0 {
				t.Errorf("after Delete received %d (err %v)", len(after), err)
			}
			actions := map[string]int{}
			for _, c := range f.Invocations() {
				actions[c.Action]++
			}
			wantLookups := map[string]int{"name": 1, "url": 0}[by]
			if actions["GetQueueUrl"] != wantLookups || actions["DeleteMessage"] != len(junk)+len(valid) {
				t.Errorf("calls %v: want GetQueueUrl %d times (once, by name), DeleteMessage for each junk and handled message", actions, wantLookups)
			}
		})
	}
}

// TestReceiveTakesTen: one Receive takes at most ten messages.
func TestReceiveTakesTen(t *testing.T) {
	f := fake.New(fake.Options{})
	defer f.Close()
	url := f.CreateQueue("production")
	for i := range 12 {
		f.SendMessage(url, event(fmt.Sprintf("e-%02d", i), "aws.ec2", "EC2 Spot Instance Interruption Warning", fmt.Sprintf(`{"instance-id":"i-%02d"}`, i)))
	}
	q := interruption.New(sqs.NewFromConfig(f.Config()), url)
	ctx := context.Background()
	first, err := q.Receive(ctx)
	if err != nil || len(first) != 10 {
		t.Fatalf("first receive: %d messages, err %v; want 10", len(first), err)
	}
	second, err := q.Receive(ctx)
	if err != nil || len(second) != 2 {
		t.Fatalf("second receive: %d messages, err %v; want the other 2", len(second), err)
	}
}

// TestJunkWhoseDeleteFails: the notices are still returned; the junk comes
// back after the visibility timeout and is deleted then.
func TestJunkWhoseDeleteFails(t *testing.T) {
	clock := clocktesting.NewFakeClock(time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC))
	f := fake.New(fake.Options{Clock: clock})
	defer f.Close()
	url := f.CreateQueue("production")
	f.SendMessage(url, junk[0])
	f.SendMessage(url, valid["spot"])
	q := interruption.New(sqs.NewFromConfig(f.Config()), url)
	ctx := context.Background()
	f.Fail("DeleteMessage", "InternalError", 3) // every attempt of one call
	got, err := q.Receive(ctx)
	if err != nil || len(got) != 1 || got[0].Kind != cloudprovider.SpotInterruption {
		t.Fatalf("received %+v, err %v; want the spot warning", got, err)
	}
	if left := f.QueueMessages(url); len(left) != 2 {
		t.Fatalf("%d left, want the junk (its delete failed) and the warning", len(left))
	}
	clock.Step(31 * time.Second)
	again, err := q.Receive(ctx)
	if err != nil || len(again) != 1 {
		t.Fatalf("received %+v again, err %v", again, err)
	}
	if left := f.QueueMessages(url); len(left) != 1 || left[0] != valid["spot"] {
		t.Errorf("left %q, want the warning only", left)
	}
	if err := q.Delete(ctx, interruption.Message{ID: "x"}); err == nil || !strings.Contains(err.Error(), "no receipt handle") {
		t.Errorf("Delete without a receipt handle: %v", err)
	}
}

func TestUnknownQueue(t *testing.T) {
	f := fake.New(fake.Options{})
	defer f.Close()
	q := interruption.New(sqs.NewFromConfig(f.Config()), "nope")
	_, err := q.Receive(context.Background())
	if err == nil || !strings.Contains(err.Error(), `looking up interruption queue "nope"`) {
		t.Errorf("got %v", err)
	}
}

// TestFakeEvents: the bodies the fake sends for the four kinds (what the
// AWS provider's and the controller's tests use) come back as notices.
func TestFakeEvents(t *testing.T) {
	f := fake.New(fake.Options{})
	defer f.Close()
	url := f.CreateQueue("production")
	for _, body := range []string{
		f.SpotInterruptionWarning("i-01"),
		f.RebalanceRecommendation("i-02"),
		f.ScheduledChange("i-03", "i-04"),
		f.StateChange("i-05", "stopped"),
		f.StateChange("i-06", "shutting-down"),
		f.StateChange("i-07", "running"),
	} {
		f.SendMessage(url, body)
	}
	got, err := interruption.New(sqs.NewFromConfig(f.Config()), url).Receive(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]cloudprovider.InterruptionKind{}
	for _, m := range got {
		kinds[strings.Join(m.InstanceIDs, ",")] = m.Kind
	}
	want := map[string]cloudprovider.InterruptionKind{
		"i-01": cloudprovider.SpotInterruption, "i-02": cloudprovider.RebalanceRecommendation,
		"i-03,i-04": cloudprovider.ScheduledChange, "i-05": cloudprovider.InstanceStopping, "i-06": cloudprovider.InstanceTerminating,
	}
	if !reflect.DeepEqual(kinds, want) {
		t.Errorf("got %v, want %v", kinds, want)
	}
	if left := f.QueueMessages(url); len(left) != 5 {
		t.Errorf("%d left, want 5 (the running state change deleted)", len(left))
	}
}
