import MemoModel
import MemoTestSupport
import Synchronization
import Testing

@Suite("Subject: replay, order, cancellation, concurrency")
struct SubjectTests {
    @Test func replaysTheCurrentValueThenEverySend() {
        let subject = Subject(1)
        subject.send(2)
        let recorder = Recorder<Int>()
        let subscription = subject.subscribe { recorder.record($0) }
        subject.send(3)
        subject.send(4)
        #expect(recorder.values == [2, 3, 4])
        #expect(subject.value == 4)
        subscription.cancel()
    }

    @Test func aSubjectWithoutInitialValueReplaysNothing() {
        let subject = Subject<Int>()
        subject.send(1)
        let recorder = Recorder<Int>()
        let subscription = subject.subscribe { recorder.record($0) }
        subject.send(2)
        #expect(recorder.values == [2])
        subscription.cancel()
    }

    @Test func everySubscriberGetsEveryValueInOrder() {
        let subject = Subject(0)
        let recorders = (0..<5).map { _ in Recorder<Int>() }
        let subscriptions = recorders.map { recorder in subject.subscribe { recorder.record($0) } }
        for i in 1...100 { subject.send(i) }
        for recorder in recorders { #expect(recorder.values == Array(0...100)) }
        subscriptions.forEach { $0.cancel() }
    }

    @Test func cancellingStopsDeliveryAndReleasesTheHandler() {
        final class Box: Sendable {}
        let subject = Subject(0)
        let recorder = Recorder<Int>()
        weak var weakBox: Box?
        var subscription: Subscription?
        do {
            let box = Box()
            weakBox = box
            subscription = subject.subscribe { value in
                _ = box
                recorder.record(value)
            }
        }
        #expect(weakBox != nil)
        subject.send(1)
        subscription?.cancel()
        subscription?.cancel()  // twice is harmless
        subject.send(2)
        #expect(recorder.values == [0, 1])
        #expect(weakBox == nil)
        #expect(subject.subscriberCount == 0)
    }

    /// What a store reads, under its lock, to skip making a change event nobody would get.
    @Test func hasSubscribersFollowsSubscribeCancelAndComplete() {
        let subject = Subject<Int>()
        #expect(!subject.hasSubscribers)
        let first = subject.subscribe { _ in }
        let second = subject.subscribe { _ in }
        #expect(subject.hasSubscribers)
        first.cancel()
        #expect(subject.hasSubscribers)
        second.cancel()
        #expect(!subject.hasSubscribers)
        let third = subject.subscribe { _ in }
        #expect(subject.hasSubscribers)
        subject.complete()
        #expect(!subject.hasSubscribers)
        third.cancel()
    }

    @Test func aHandlerMaySendWithoutDeadlockAndOrderHolds() {
        let subject = Subject(0)
        let recorder = Recorder<Int>()
        let subscription = subject.subscribe { value in
            recorder.record(value)
            if value < 5 { subject.send(value + 1) }
        }
        #expect(recorder.values == [0, 1, 2, 3, 4, 5])
        subscription.cancel()
    }

    @Test func concurrentSendersLoseNothingAndNeverOverlapAHandler() async {
        let subject = Subject<Int>()
        let recorder = Recorder<Int>()
        let inHandler = Atomic<Int>(0)
        let overlaps = Atomic<Int>(0)
        let subscription = subject.subscribe { value in
            if inHandler.add(1, ordering: .sequentiallyConsistent).newValue > 1 {
                overlaps.add(1, ordering: .relaxed)
            }
            recorder.record(value)
            inHandler.subtract(1, ordering: .sequentiallyConsistent)
        }
        await withTaskGroup(of: Void.self) { group in
            for sender in 0..<8 {
                group.addTask {
                    for i in 0..<1000 { subject.send(sender * 1000 + i) }
                }
            }
        }
        await recorder.wait(for: 8000)
        #expect(Set(recorder.values) == Set(0..<8000))
        #expect(overlaps.load(ordering: .relaxed) == 0)
        // Each sender's values arrive in the order it sent them.
        for sender in 0..<8 {
            let mine = recorder.values.filter { $0 / 1000 == sender }
            #expect(mine == mine.sorted())
        }
        subscription.cancel()
    }

    @Test func bridgesToAsyncSequence() async {
        let subject = Subject("a")
        var received: [String] = []
        do {
            let stream = subject.values
            subject.send("b")
            subject.send("c")
            for await value in stream {
                received.append(value)
                if received.count == 3 { break }
            }
        }
        #expect(received == ["a", "b", "c"])
        // The stream is gone, so its subscription ended.
        #expect(subject.subscriberCount == 0)
    }
}
