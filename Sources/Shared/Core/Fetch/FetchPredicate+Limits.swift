extension FetchPredicate {
    /// Checks the predicate against ``PredicateLimits`` (depth, nodes, list sizes, values) without recursing deeper
    /// than the depth limit, so even a predicate built by hand with absurd nesting is rejected safely.
    /// - Throws: ``FetchPredicateError`` of kind `tooComplex` naming the limit.
    func checkLimits() throws {
        var nodes = 0
        var values = 0
        try checkLimits(depth: 1, nodes: &nodes, values: &values)
    }

    private func checkLimits(depth: Int, nodes: inout Int, values: inout Int) throws {
        try PredicateLimits.countNode(depth: depth, nodes: &nodes)
        switch self {
        case .constant:
            break
        case .comparison(let comparison):
            let count = comparison.value.count
            guard count <= PredicateLimits.maxListElements else {
                throw FetchPredicateError.tooComplex(
                    "the list compared with \(FetchPredicateError.quoted(comparison.key)) has \(count) values; at most "
                        + "\(PredicateLimits.maxListElements) are allowed")
            }
            values += count
            guard values <= PredicateLimits.maxValues else {
                throw FetchPredicateError.tooComplex("the predicate has more than \(PredicateLimits.maxValues) values")
            }
        case .and(let operands), .or(let operands):
            for operand in operands {
                try operand.checkLimits(depth: depth + 1, nodes: &nodes, values: &values)
            }
        case .not(let operand):
            try operand.checkLimits(depth: depth + 1, nodes: &nodes, values: &values)
        }
    }
}
