package actors

// NewSerialObserved is NewSerial with a hook the actor calls, on its own
// goroutine, each time it queues a turn behind the running one, with the
// number now queued. The hook must not block.
func NewSerialObserved(sys *System, onQueued func(queued int)) (*Serial, error) {
	return newSerial(sys, onQueued)
}
