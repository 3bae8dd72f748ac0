import TributaryProtocol

extension FetchPredicate {
    /// The predicate as the wire's `Predicate` tree.
    package var wire: Tributary_V1_Predicate {
        var message = Tributary_V1_Predicate()
        switch self {
        case .constant(let value):
            message.constant = value
        case .comparison(let comparison):
            message.comparison = comparison.wire
        case .and(let operands):
            var list = Tributary_V1_PredicateList()
            list.operands = operands.map(\.wire)
            message.and = list
        case .or(let operands):
            var list = Tributary_V1_PredicateList()
            list.operands = operands.map(\.wire)
            message.or = list
        case .not(let operand):
            message.not = operand.wire
        }
        return message
    }

    /// Reads a predicate from the wire, checking its shape and ``PredicateLimits``.
    /// - Throws: ``FetchPredicateError``: `syntax` for an empty oneof, an unspecified operator, an empty value or a
    ///   wrong number of values; `tooComplex` for a tree over the limits.
    package init(wire: Tributary_V1_Predicate) throws {
        var nodes = 0
        try self.init(wire: wire, depth: 1, nodes: &nodes)
        try checkLimits()
    }

    private init(wire: Tributary_V1_Predicate, depth: Int, nodes: inout Int) throws {
        try PredicateLimits.countNode(depth: depth, nodes: &nodes)
        switch wire.kind {
        case .none:
            throw FetchPredicateError(.syntax, "malformed predicate: a Predicate message has none of its kinds set")
        case .constant(let value):
            self = .constant(value)
        case .comparison(let comparison):
            self = .comparison(try Comparison(wire: comparison))
        case .and(let list):
            var operands: [FetchPredicate] = []
            for operand in list.operands {
                operands.append(try FetchPredicate(wire: operand, depth: depth + 1, nodes: &nodes))
            }
            self = .and(operands)
        case .or(let list):
            var operands: [FetchPredicate] = []
            for operand in list.operands {
                operands.append(try FetchPredicate(wire: operand, depth: depth + 1, nodes: &nodes))
            }
            self = .or(operands)
        case .not(let operand):
            self = .not(try FetchPredicate(wire: operand, depth: depth + 1, nodes: &nodes))
        }
    }
}

extension FetchPredicate.Comparison {
    /// The comparison as the wire's `Comparison`: a list's elements, or the single value, in `values`.
    package var wire: Tributary_V1_Comparison {
        var message = Tributary_V1_Comparison()
        message.key = key
        message.operator = op.wire
        if case .list(let values) = value {
            message.values = values.map(\.wire)
        } else {
            message.values = [value.wire]
        }
        message.caseInsensitive = caseInsensitive
        message.diacriticInsensitive = diacriticInsensitive
        message.quantifier = quantifier.wire
        return message
    }

    /// Reads a comparison from the wire: `IN` takes its values as a list, every other operator exactly one value.
    /// - Throws: ``FetchPredicateError`` naming the problem.
    package init(wire: Tributary_V1_Comparison) throws {
        let op = try FetchPredicate.ComparisonOperator(wire: wire.operator)
        let value: PredicateValue
        if op == .in {
            guard wire.values.count <= PredicateLimits.maxListElements else {
                throw FetchPredicateError.tooComplex(
                    "the list compared with \(FetchPredicateError.quoted(wire.key)) has \(wire.values.count) values; at "
                        + "most \(PredicateLimits.maxListElements) are allowed")
            }
            value = .list(try wire.values.map(PredicateValue.init(wire:)))
        } else {
            guard wire.values.count == 1 else {
                throw FetchPredicateError(
                    .syntax,
                    "malformed predicate: the comparison of \(FetchPredicateError.quoted(wire.key)) has "
                        + "\(wire.values.count) values; \(op.formatSymbol) takes exactly one")
            }
            value = try PredicateValue(wire: wire.values[0])
        }
        self.init(
            key: wire.key, op: op, value: value, caseInsensitive: wire.caseInsensitive,
            diacriticInsensitive: wire.diacriticInsensitive,
            quantifier: try FetchPredicate.Quantifier(wire: wire.quantifier))
    }
}

extension FetchPredicate.Quantifier {
    /// The quantifier on the wire.
    package var wire: Tributary_V1_Quantifier {
        switch self {
        case .direct: .direct
        case .any: .any
        case .all: .all
        case .none: .none
        }
    }

    /// Reads a quantifier from the wire.
    /// - Throws: ``FetchPredicateError`` of kind `syntax` for an unknown one.
    package init(wire: Tributary_V1_Quantifier) throws {
        switch wire {
        case .direct: self = .direct
        case .any: self = .any
        case .all: self = .all
        case .none: self = .none
        case .UNRECOGNIZED(let raw):
            throw FetchPredicateError(.syntax, "malformed predicate: unknown quantifier \(raw)")
        }
    }
}

extension FetchPredicate.ComparisonOperator {
    /// The operator on the wire.
    package var wire: Tributary_V1_ComparisonOperator {
        switch self {
        case .equal: .equal
        case .notEqual: .notEqual
        case .less: .less
        case .lessOrEqual: .lessOrEqual
        case .greater: .greater
        case .greaterOrEqual: .greaterOrEqual
        case .in: .in
        case .beginsWith: .beginsWith
        case .endsWith: .endsWith
        case .contains: .contains
        case .like: .like
        }
    }

    /// Reads an operator from the wire.
    /// - Throws: ``FetchPredicateError`` of kind `syntax` for an unspecified or unknown operator.
    package init(wire: Tributary_V1_ComparisonOperator) throws {
        switch wire {
        case .equal: self = .equal
        case .notEqual: self = .notEqual
        case .less: self = .less
        case .lessOrEqual: self = .lessOrEqual
        case .greater: self = .greater
        case .greaterOrEqual: self = .greaterOrEqual
        case .in: self = .in
        case .beginsWith: self = .beginsWith
        case .endsWith: self = .endsWith
        case .contains: self = .contains
        case .like: self = .like
        case .unspecified:
            throw FetchPredicateError(.syntax, "malformed predicate: a comparison's operator is unspecified")
        case .UNRECOGNIZED(let raw):
            throw FetchPredicateError(.syntax, "malformed predicate: unknown comparison operator \(raw)")
        }
    }
}
