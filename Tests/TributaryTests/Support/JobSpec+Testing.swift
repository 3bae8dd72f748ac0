@testable import TributaryCore

extension JobSpec {
    /// This spec changed by `change`: a spec with parents or limits written as one expression.
    func with(_ change: (inout JobSpec) -> Void) -> JobSpec {
        var copy = self
        change(&copy)
        return copy
    }
}
