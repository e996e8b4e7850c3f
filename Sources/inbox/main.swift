import MockCloudConfig
import MockCloudHTTP

CGIProgram.serve(name: "inbox", bodyLimit: InboxRoute.bulkBodyLimit) { request, afterAnswer in
    try InboxRoute(config: ServiceConfig(authorizing: request)).respond(to: request, afterAnswer: &afterAnswer)
}
