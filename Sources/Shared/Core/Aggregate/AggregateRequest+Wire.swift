import TributaryProtocol

extension AggregateRequest {
    /// The request on the wire.
    package var wire: Tributary_V1_AggregateRequest {
        var wire = Tributary_V1_AggregateRequest()
        wire.entity = entity
        if let predicate { wire.predicate = predicate.wire }
        wire.groupBy = groupBy
        wire.aggregates = aggregates.map { expression in
            var message = Tributary_V1_AggregateExpression()
            message.function = expression.function.wire
            message.key = expression.key ?? ""
            message.name = expression.name
            return message
        }
        if let having { wire.having = having.wire }
        wire.sort = sortDescriptors.map(\.wire)
        wire.limit = UInt32(clamping: max(0, fetchLimit))
        wire.offset = UInt32(clamping: max(0, fetchOffset))
        return wire
    }

    /// Reads a request from the wire; the model checks its keys when it is compiled.
    /// - Throws: ``FetchPredicateError`` of kind `syntax` for an aggregate without a function or a name, or a
    ///   malformed predicate.
    package init(wire: Tributary_V1_AggregateRequest) throws {
        let aggregates = try wire.aggregates.enumerated().map { index, message -> AggregateExpression in
            guard let function = AggregateFunction(wire: message.function) else {
                throw FetchPredicateError(.syntax, "aggregate \(index) has no function")
            }
            guard !message.name.isEmpty else {
                throw FetchPredicateError(.syntax, "aggregate \(index) (\(function.rawValue)) has no name")
            }
            return AggregateExpression(function, message.key.isEmpty ? nil : message.key, as: message.name)
        }
        self.init(
            entity: wire.entity, predicate: wire.hasPredicate ? try FetchPredicate(wire: wire.predicate) : nil,
            groupBy: wire.groupBy, aggregates: aggregates,
            having: wire.hasHaving ? try FetchPredicate(wire: wire.having) : nil,
            sortedBy: wire.sort.map(FetchSort.init(wire:)), limit: Int(wire.limit), offset: Int(wire.offset))
    }
}

extension AggregateFunction {
    /// The function on the wire.
    var wire: Tributary_V1_AggregateFunction {
        switch self {
        case .count: .aggregateCount
        case .sum: .aggregateSum
        case .avg: .aggregateAvg
        case .min: .aggregateMin
        case .max: .aggregateMax
        }
    }

    /// The function a wire value names; nil for none.
    init?(wire: Tributary_V1_AggregateFunction) {
        switch wire {
        case .aggregateCount: self = .count
        case .aggregateSum: self = .sum
        case .aggregateAvg: self = .avg
        case .aggregateMin: self = .min
        case .aggregateMax: self = .max
        case .unspecified, .UNRECOGNIZED: return nil
        }
    }
}

extension AggregateResult {
    /// The result on the wire.
    package var wire: Tributary_V1_AggregateReply {
        var wire = Tributary_V1_AggregateReply()
        wire.names = names
        wire.rows = rows.map { row in .with { $0.values = row.values.map(Tributary_V1_Value.init) } }
        wire.seq = seq
        return wire
    }

    /// Reads the rows of a reply to `request`: each row's first values are its group keys.
    /// - Throws: ``FetchPredicateError`` of kind `syntax` for a row whose values do not match the names.
    package init(wire: Tributary_V1_AggregateReply, groupKeyCount: Int) throws {
        let rows = try wire.rows.enumerated().map { index, row in
            guard row.values.count == wire.names.count else {
                throw FetchPredicateError(
                    .syntax,
                    "row \(index) of the aggregate reply has \(row.values.count) values for "
                        + "\(wire.names.count) names")
            }
            return AggregateRow(
                names: wire.names, values: row.values.map(\.attributeValue), groupKeyCount: groupKeyCount)
        }
        self.init(names: wire.names, rows: rows, seq: wire.seq)
    }
}
