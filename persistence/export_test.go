package persistence

// AfterSaveForTest returns a manager option that calls fn after every save
// the manager commits (not for skipped ones), with the owner's key, the save
// point and the new version: crash tests stop a process right there.
func AfterSaveForTest(fn func(key Key, point SavePoint, version int64)) ManagerOption {
	return func(o *managerOptions) { o.afterSave = fn }
}

// TakenWaitForTest returns a manager option that calls fn when an agent's
// save waits for the commit of the change its orchestrator took
// (TakeDeferred), with the agent's key.
func TakenWaitForTest(fn func(key Key)) ManagerOption {
	return func(o *managerOptions) { o.takenWait = fn }
}
