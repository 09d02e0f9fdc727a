package controller

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
)

// recorder records Kubernetes Events as upstream's reasons name them.
type recorder struct{ r events.EventRecorder }

// event records an Event on obj (related, if set, is the other object it
// concerns).
func (r recorder) event(obj, related runtime.Object, eventType, reason, format string, args ...any) {
	r.r.Eventf(obj, related, eventType, reason, reason, format, args...)
}
