import MockCloudCore

CGIProgram.serve(name: "inbox", bodyLimit: InboxRoute.bodyLimit) { request in
    try InboxRoute(
        dataRoot: ServiceConfig.dataRoot(request.environment),
        settings: InboxSettings(environment: request.environment)
    ).respond(to: request)
}
