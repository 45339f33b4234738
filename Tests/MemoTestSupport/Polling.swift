import Foundation

/// Polls `condition` until it holds or `seconds` pass; whether it held. Tests wait for a condition this way rather
/// than sleep.
package func pollUntil(seconds: Double = 30, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while ContinuousClock.now < deadline {
        if try condition() { return true }
        Thread.sleep(forTimeInterval: 0.05)
    }
    return try condition()
}
