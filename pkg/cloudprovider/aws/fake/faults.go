package fake

import (
	"net/http"
	"strings"
)

// faults are the failures a test has asked for.
type faults struct {
	// throttles and failures count down per action ("CreateFleet" or
	// "ec2:CreateFleet").
	throttles map[string]int
	failures  map[string]*failure
	// pricingDown: Pricing answers 503.
	pricingDown bool
	// partial: the next CreateFleet launches at most *partial instances.
	partial *int
	// ice: offerings without capacity, by instance type, zone, capacity type.
	ice map[offering]bool
}

type offering struct{ instanceType, zone, capacityType string }

type failure struct {
	code  string
	times int
}

// take returns the error a fault makes of the call, counting it down; nil
// when no fault applies.
func (fs *faults) take(s *service, c Call) error {
	if fs.pricingDown && c.Service == "pricing" {
		return newError(http.StatusServiceUnavailable, "ServiceUnavailableException", "the Pricing API is unavailable")
	}
	for _, key := range []string{c.Action, c.IAMAction()} {
		if fs.throttles[key] > 0 {
			fs.throttles[key]--
			return newError(s.throttleStatus, s.throttleCode, "Rate exceeded")
		}
		if fl := fs.failures[key]; fl != nil && fl.times > 0 {
			fl.times--
			return newError(statusOf(fl.code), fl.code, "%s failed (a fault the test set)", c.IAMAction())
		}
	}
	return nil
}

// statusOf is the HTTP status AWS answers an error code with.
func statusOf(code string) int {
	switch {
	case strings.Contains(code, "Unavailable"):
		return http.StatusServiceUnavailable
	case strings.HasPrefix(code, "Internal"):
		return http.StatusInternalServerError
	case code == "RequestLimitExceeded":
		return http.StatusServiceUnavailable
	}
	return http.StatusBadRequest
}

// Throttle makes the next times calls of action (CreateFleet, or
// ec2:CreateFleet) answer as AWS does when throttling: RequestLimitExceeded
// (EC2, HTTP 503), Throttling (IAM, 400), ThrottlingException (the JSON
// services, 400). The SDK's standard retryer retries them.
func (f *AWS) Throttle(action string, times int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.faults.throttles == nil {
		f.faults.throttles = map[string]int{}
	}
	f.faults.throttles[action] = times
}

// Fail makes the next times calls of action fail with code (HTTP 503 for a
// code naming unavailability, 500 for Internal…, else 400).
func (f *AWS) Fail(action, code string, times int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.faults.failures == nil {
		f.faults.failures = map[string]*failure{}
	}
	f.faults.failures[action] = &failure{code: code, times: times}
}

// PricingUnavailable makes every Pricing call answer 503
// ServiceUnavailableException (retried by the SDK, then an error), until
// PricingUnavailable(false).
func (f *AWS) PricingUnavailable(down bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults.pricingDown = down
}

// PartialFleet makes the next CreateFleet launch at most launch instances;
// the rest come back as InsufficientInstanceCapacity errors.
func (f *AWS) PartialFleet(launch int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults.partial = &launch
}

// InsufficientCapacity makes CreateFleet answer overrides of instanceType in
// zone for capacityType (on-demand or spot) with an
// InsufficientInstanceCapacity error entry, until ClearInsufficientCapacity.
func (f *AWS) InsufficientCapacity(instanceType, zone, capacityType string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.faults.ice == nil {
		f.faults.ice = map[offering]bool{}
	}
	f.faults.ice[offering{instanceType, zone, capacityType}] = true
}

// ClearInsufficientCapacity ends every InsufficientCapacity.
func (f *AWS) ClearInsufficientCapacity() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults.ice = nil
}
