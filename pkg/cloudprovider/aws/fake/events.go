package fake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// The bodies EventBridge puts in an interruption queue, for SendMessage:
// the four kinds of event an interruption handler acts on, as AWS sends
// them (source, detail-type, detail).

// SpotInterruptionWarning is the two-minute warning before a spot instance
// is reclaimed.
func (f *AWS) SpotInterruptionWarning(instanceID string) string {
	return f.event("aws.ec2", "EC2 Spot Instance Interruption Warning", []string{f.instanceARN(instanceID)},
		map[string]string{"instance-id": instanceID, "instance-action": "terminate"})
}

// RebalanceRecommendation says a spot instance is at elevated risk of
// interruption.
func (f *AWS) RebalanceRecommendation(instanceID string) string {
	return f.event("aws.ec2", "EC2 Instance Rebalance Recommendation", []string{f.instanceARN(instanceID)},
		map[string]string{"instance-id": instanceID})
}

// StateChange says an instance entered state (stopping, stopped,
// shutting-down, terminated, …).
func (f *AWS) StateChange(instanceID, state string) string {
	return f.event("aws.ec2", "EC2 Instance State-change Notification", []string{f.instanceARN(instanceID)},
		map[string]string{"instance-id": instanceID, "state": state})
}

// ScheduledChange is an AWS Health scheduled change (an instance
// retirement) for instances.
func (f *AWS) ScheduledChange(instanceIDs ...string) string {
	f.mu.Lock()
	now := f.clock.Now().UTC()
	f.mu.Unlock()
	entities := make([]map[string]string, len(instanceIDs))
	for i, id := range instanceIDs {
		entities[i] = map[string]string{"entityValue": id}
	}
	return f.event("aws.health", "AWS Health Event", nil, map[string]any{
		"eventArn":          fmt.Sprintf("arn:aws:health:%s::event/EC2/AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED/%d", f.region, now.Unix()),
		"service":           "EC2",
		"eventTypeCode":     "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED",
		"eventTypeCategory": "scheduledChange",
		"startTime":         now.Add(14 * 24 * time.Hour).Format(http.TimeFormat),
		"endTime":           now.Add(15 * 24 * time.Hour).Format(http.TimeFormat),
		"eventDescription": []map[string]string{{"language": "en_US",
			"latestDescription": "EC2 has detected degradation of the underlying hardware hosting your instance."}},
		"affectedEntities": entities,
	})
}

func (f *AWS) instanceARN(id string) string {
	return fmt.Sprintf("arn:aws:ec2:%s:%s:instance/%s", f.region, AccountID, id)
}

func (f *AWS) event(source, detailType string, resources []string, detail any) string {
	f.mu.Lock()
	n, now := f.nextID(), f.clock.Now().UTC()
	f.mu.Unlock()
	if resources == nil {
		resources = []string{}
	}
	b, _ := json.Marshal(map[string]any{
		"version":     "0",
		"id":          fmt.Sprintf("%08x-0000-4000-8000-%012x", n, n),
		"detail-type": detailType,
		"source":      source,
		"account":     AccountID,
		"time":        now.Format(time.RFC3339),
		"region":      f.region,
		"resources":   resources,
		"detail":      detail,
	})
	return string(b)
}
