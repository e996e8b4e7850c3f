import MockCloudCore

CGIProgram.serve(name: "inbox", bodyLimit: InboxRoute.bodyLimit) { request in
    let environment = request.environment
    return try InboxRoute(config: ServiceConfig(environment: environment), environment: environment).respond(to: request)
}
