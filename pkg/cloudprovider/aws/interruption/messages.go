package interruption

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
)

// The EventBridge events the queue's rules send (source, detail-type).
const (
	sourceEC2    = "aws.ec2"
	sourceHealth = "aws.health"

	spotInterruptionWarning = "EC2 Spot Instance Interruption Warning"
	rebalanceRecommendation = "EC2 Instance Rebalance Recommendation"
	healthEvent             = "AWS Health Event"
	stateChangeNotification = "EC2 Instance State-change Notification"
	// reservationInterruption: the owner of an interruptible capacity
	// reservation takes it back; its instances have two minutes.
	reservationInterruption = "EC2 Capacity Reservation Instance Interruption Warning"
)

// event is an EventBridge event's envelope; detail is read by kind.
type event struct {
	Version    string          `json:"version"`
	ID         string          `json:"id"`
	DetailType string          `json:"detail-type"`
	Source     string          `json:"source"`
	Detail     json.RawMessage `json:"detail"`
}

// ec2Detail: the spot warning's, the rebalance recommendation's and the
// state change's detail name one instance (the warning adds its action,
// the state change the state).
type ec2Detail struct {
	InstanceID string `json:"instance-id"`
	State      string `json:"state"`
}

// healthDetail: an AWS Health event names the service, the category
// (scheduledChange for maintenance) and the affected resources.
type healthDetail struct {
	Service           string `json:"service"`
	EventTypeCategory string `json:"eventTypeCategory"`
	EventTypeCode     string `json:"eventTypeCode"`
	AffectedEntities  []struct {
		EntityValue string `json:"entityValue"`
	} `json:"affectedEntities"`
}

// stateKinds: the instance states that take it away; other states
// (pending, running) are no interruption.
var stateKinds = map[string]cloudprovider.InterruptionKind{
	"stopping":      cloudprovider.InstanceStopping,
	"stopped":       cloudprovider.InstanceStopping,
	"shutting-down": cloudprovider.InstanceTerminating,
	"terminated":    cloudprovider.InstanceTerminating,
}

// parse reads a message body as one of the five events upstream Karpenter
// acts on. It returns the event's ID, the kind and the instances, or why
// the body is not an interruption.
// Its complexity is one case per event kind and its fields.
func parse(body string) (id string, kind cloudprovider.InterruptionKind, instances []string, err error) {
	var ev event
	if err := json.Unmarshal([]byte(body), &ev); err != nil {
		return "", "", nil, fmt.Errorf("not an EventBridge event: %w", err)
	}
	if ev.Version != "" && ev.Version != "0" {
		return ev.ID, "", nil, fmt.Errorf("EventBridge event version %q (only 0 is known)", ev.Version)
	}
	switch {
	case ev.Source == sourceEC2 && (ev.DetailType == spotInterruptionWarning || ev.DetailType == rebalanceRecommendation || ev.DetailType == stateChangeNotification ||
		ev.DetailType == reservationInterruption):
		var d ec2Detail
		if err := json.Unmarshal(ev.Detail, &d); err != nil {
			return ev.ID, "", nil, fmt.Errorf("%s: detail: %w", ev.DetailType, err)
		}
		switch ev.DetailType {
		case spotInterruptionWarning:
			kind = cloudprovider.SpotInterruption
		case rebalanceRecommendation:
			kind = cloudprovider.RebalanceRecommendation
		case reservationInterruption:
			kind = cloudprovider.CapacityReservationInterrupted
		default:
			var ok bool
			if kind, ok = stateKinds[strings.ToLower(d.State)]; !ok {
				return ev.ID, "", nil, fmt.Errorf("%s: state %q is no interruption", ev.DetailType, d.State)
			}
		}
		instances = []string{d.InstanceID}
	case ev.Source == sourceHealth && ev.DetailType == healthEvent:
		var d healthDetail
		if err := json.Unmarshal(ev.Detail, &d); err != nil {
			return ev.ID, "", nil, fmt.Errorf("%s: detail: %w", ev.DetailType, err)
		}
		if d.Service != "EC2" || d.EventTypeCategory != "scheduledChange" {
			return ev.ID, "", nil, fmt.Errorf("%s: %s %s (%s) is no EC2 scheduled change", ev.DetailType, d.Service, d.EventTypeCategory, d.EventTypeCode)
		}
		kind = cloudprovider.ScheduledChange
		for _, a := range d.AffectedEntities {
			instances = append(instances, a.EntityValue)
		}
	default:
		return ev.ID, "", nil, fmt.Errorf("event %q from %q is no interruption", ev.DetailType, ev.Source)
	}
	var ids []string
	for _, i := range instances {
		if strings.HasPrefix(i, "i-") {
			ids = append(ids, i)
		}
	}
	if len(ids) == 0 {
		return ev.ID, "", nil, fmt.Errorf("%s names no instance (%q)", ev.DetailType, instances)
	}
	return ev.ID, kind, ids, nil
}
