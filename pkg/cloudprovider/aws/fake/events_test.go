package fake

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// event is an EventBridge message as an interruption handler reads it.
type event struct {
	Source     string `json:"source"`
	DetailType string `json:"detail-type"`
	Account    string `json:"account"`
	Region     string `json:"region"`
	Detail     struct {
		InstanceID       string `json:"instance-id"`
		InstanceAction   string `json:"instance-action"`
		State            string `json:"state"`
		Service          string `json:"service"`
		EventTypeCode    string `json:"eventTypeCode"`
		Category         string `json:"eventTypeCategory"`
		AffectedEntities []struct {
			EntityValue string `json:"entityValue"`
		} `json:"affectedEntities"`
	} `json:"detail"`
}

func TestEvents(t *testing.T) {
	f := standard(t)
	url := f.CreateQueue("production")
	for _, tc := range []struct {
		name, body, source, detailType string
		check                          func(e event) bool
	}{
		{"spot", f.SpotInterruptionWarning("i-1"), "aws.ec2", "EC2 Spot Instance Interruption Warning",
			func(e event) bool { return e.Detail.InstanceID == "i-1" && e.Detail.InstanceAction == "terminate" }},
		{"rebalance", f.RebalanceRecommendation("i-2"), "aws.ec2", "EC2 Instance Rebalance Recommendation",
			func(e event) bool { return e.Detail.InstanceID == "i-2" }},
		{"state change", f.StateChange("i-3", "stopping"), "aws.ec2", "EC2 Instance State-change Notification",
			func(e event) bool { return e.Detail.InstanceID == "i-3" && e.Detail.State == "stopping" }},
		{"scheduled change", f.ScheduledChange("i-4", "i-5"), "aws.health", "AWS Health Event",
			func(e event) bool {
				var ids []string
				for _, a := range e.Detail.AffectedEntities {
					ids = append(ids, a.EntityValue)
				}
				return e.Detail.Service == "EC2" && e.Detail.Category == "scheduledChange" && slices.Equal(ids, []string{"i-4", "i-5"})
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.SendMessage(url, tc.body)
			out, err := sqs.NewFromConfig(f.Config()).ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url)})
			if err != nil || len(out.Messages) != 1 {
				t.Fatalf("receive: %v, %d messages", err, len(out.Messages))
			}
			var e event
			if err := json.Unmarshal([]byte(aws.ToString(out.Messages[0].Body)), &e); err != nil {
				t.Fatal(err)
			}
			if e.Source != tc.source || e.DetailType != tc.detailType || e.Account != AccountID || e.Region != "us-east-1" || !tc.check(e) {
				t.Errorf("event = %+v", e)
			}
		})
	}
}
