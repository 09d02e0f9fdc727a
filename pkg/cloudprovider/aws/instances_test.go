package aws

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
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
