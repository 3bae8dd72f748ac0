import TributaryProtocol

extension ProtocolError {
    /// The wire error for a store failure.
    package init(_ error: StoreError, jobID: UInt64 = 0) {
        let code: Tributary_V1_ErrorCode =
            switch error.code {
            case .unknownEntity: .unknownEntity
            case .unknownAttribute: .unknownAttribute
            case .wrongType: .wrongType
            case .constraint: .constraintViolation
            case .historyPruned: .historyPruned
            case .unknownSubscriber: .unknownSubscriber
            case .invalidRequest: .invalidRequest
            case .mergeConflict: .mergeConflict
            case .invalidPredicate: .invalidPredicate
            case .unwritable: .storeUnwritable
            case .feedRewritten: .feedRewritten
            case .sqlite, .incompatibleStore, .locked: .internal
            }
        self.init(code, error.message, jobID: jobID, conflicts: error.conflicts.map(\.wire), seq: error.seq)
    }
}
