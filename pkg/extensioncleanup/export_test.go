package extensioncleanup

// BreakReleaseEarly turns the deliberately broken release on or off (the lifecycle test's broken variant).
func BreakReleaseEarly(on bool) { brokenReleaseEarly.Store(on) }
