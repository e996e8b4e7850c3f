import MockCloudCore

CGIProgram.serve(name: "inbox", bodyLimit: InboxRoute.bodyLimit) { request in
    try InboxRoute(config: ServiceConfig(authorizing: request), environment: request.environment).respond(to: request)
}
