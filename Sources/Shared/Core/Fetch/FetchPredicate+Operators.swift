extension FetchPredicate {
    /// Both predicates; nested ANDs are flattened, as the format parser does.
    public static func && (lhs: FetchPredicate, rhs: FetchPredicate) -> FetchPredicate {
        .and(lhs.andOperands + rhs.andOperands)
    }

    /// Either predicate; nested ORs are flattened, as the format parser does.
    public static func || (lhs: FetchPredicate, rhs: FetchPredicate) -> FetchPredicate {
        .or(lhs.orOperands + rhs.orOperands)
    }

    /// The negation of a predicate.
    public static prefix func ! (operand: FetchPredicate) -> FetchPredicate {
        .not(operand)
    }

    /// The operands this predicate contributes to an enclosing AND.
    var andOperands: [FetchPredicate] {
        if case .and(let operands) = self { return operands }
        return [self]
    }

    /// The operands this predicate contributes to an enclosing OR.
    var orOperands: [FetchPredicate] {
        if case .or(let operands) = self { return operands }
        return [self]
    }
}
