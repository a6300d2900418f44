//! The `ServerHandler` rmcp drives: server info, `tools/list`, `tools/call` (see `call.rs`),
//! the tasks' requests, skills (see `skills.rs`), resources (`resources.rs`), prompts and
//! completion (`prompts.rs`), and `list_changed` to the
//! sessions and `subscriptions/listen` streams.

use super::*;

/// The cursor a list request gives (`None`: the first page).
fn cursor(request: &Option<PaginatedRequestParams>) -> Option<&str> {
    request.as_ref().and_then(|r| r.cursor.as_deref())
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> InitializeResult {
        // Resources and skills are declared even when no plugin has skills: a reload may add
        // some, and a session's capabilities do not change.
        let caps = ServerCapabilities::builder()
            .enable_resources()
            .enable_resources_list_changed()
            .enable_resources_subscribe()
            .enable_prompts()
            .enable_prompts_list_changed()
            .enable_completions()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_tasks()
            .enable_skills()
            .build();
        InitializeResult::new(caps)
            .with_server_info(Implementation::new("toolhost", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Tools run in a sandbox with only the capabilities the operator granted. A tool marked \
                 destructive may ask the user for confirmation.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.first_load().await;
        Ok(self.tools_result(&super::call::caller(&context), super::call::shows_apps(&context)))
    }

    async fn list_skills(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListSkillsResult, ErrorData> {
        self.first_load().await;
        self.skills_result(cursor(&request))
    }

    async fn get_skill(
        &self,
        request: rmcp::model::GetSkillRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetSkillResult, ErrorData> {
        self.first_load().await;
        self.skill_result(&request.uri)
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourcesResult, ErrorData> {
        self.first_load().await;
        self.resources_result(cursor(&request))
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourceTemplatesResult, ErrorData> {
        self.first_load().await;
        self.templates_result(cursor(&request))
    }

    async fn subscribe(
        &self,
        request: rmcp::model::SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.first_load().await;
        let registry = self.executor.registry();
        self.watched.add(registry.plugins(), &request.uri).map_err(|e| match e {
            super::subscriptions::NotWatched::Unknown(_) => {
                ErrorData::resource_not_found(e.to_string(), None)
            }
            super::subscriptions::NotWatched::Full => ErrorData::invalid_params(e.to_string(), None),
        })
    }

    async fn unsubscribe(
        &self,
        request: rmcp::model::UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.watched.remove(&request.uri);
        Ok(())
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListPromptsResult, ErrorData> {
        self.first_load().await;
        self.prompts_result(cursor(&request))
    }

    async fn get_prompt(
        &self,
        request: rmcp::model::GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetPromptResponse, ErrorData> {
        self.first_load().await;
        let who = super::caller(&context);
        self.prompt_result(&request.name, request.arguments.as_ref(), &who).await.map(Into::into)
    }

    async fn complete(
        &self,
        request: rmcp::model::CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CompleteResult, ErrorData> {
        self.first_load().await;
        self.complete_result(&request).await
    }

    async fn read_resource(
        &self,
        request: rmcp::model::ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ReadResourceResponse, ErrorData> {
        self.first_load().await;
        self.read_result(&request.uri, &super::caller(&context)).await.map(Into::into)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // A cancellation reaches the executor (see `McpServer::call`), which stops the call and
        // answers `cancelled`.
        let task_2025 = tasks2025::on_2025_11_25(&context).then_some(false);
        self.call(request, &context, task_2025).await
    }

    /// The 2025-11-25 task requests the transports renamed (see `tasks2025.rs`).
    async fn on_custom_request(
        &self,
        request: rmcp::model::CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CustomResult, ErrorData> {
        match self.on_2025_11_25(&request, &context).await {
            Some(answer) => answer.map(rmcp::model::CustomResult),
            None => Err(ErrorData::new(rmcp::model::ErrorCode::METHOD_NOT_FOUND, request.method, None)),
        }
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        self.tasks.get(&owner(&context), &request.task_id)
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.tasks.update(&owner(&context), &request.task_id)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.tasks.cancel(&owner(&context), &request.task_id)
    }

    /// 2026-07-28: `subscriptions/listen` may ask for `toolsListChanged`, `resourcesListChanged`
    /// and `promptsListChanged` (when a reloader watches the folder; otherwise the lists never
    /// change and the request is not offered).
    fn accepted_subscription_filter(&self, requested: &SubscriptionFilter) -> Option<SubscriptionFilter> {
        self.reloader.as_ref()?;
        // The URIs asked for that are served now (a listen follows them as a session does).
        let uris = requested.resource_subscriptions.as_deref().unwrap_or_default();
        let registry = self.executor.registry();
        let served = super::subscriptions::Watched::default().accept(registry.plugins(), uris);
        let offered = SubscriptionFilter::builder()
            .tools_list_changed()
            .resources_list_changed()
            .prompts_list_changed()
            .resource_subscriptions(served)
            .build();
        Some(requested.intersection(&offered))
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let Some(reloader) = &self.reloader else {
            context.cancelled().await;
            return Ok(());
        };
        // The first load is not a change of the list: the client lists after it.
        tokio::select! {
            _ = context.cancelled() => return Ok(()),
            () = self.first_load() => {}
        }
        let mut rx = reloader.subscribe();
        let sink = context.sink().clone();
        let watched = super::subscriptions::Watched::default();
        let uris = context.accepted().resource_subscriptions.clone().unwrap_or_default();
        watched.accept(self.executor.registry().plugins(), &uris);
        loop {
            tokio::select! {
                _ = context.cancelled() => return Ok(()),
                change = rx.recv() => match change {
                    Ok(c) if c.added.is_empty() && c.changed.is_empty() && c.removed.is_empty() => {}
                    Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {
                        let accepted = context.accepted();
                        if accepted.tools_list_changed == Some(true)
                            && sink.notify_tool_list_changed().await.is_err()
                        {
                            return Ok(()); // the client is gone
                        }
                        if accepted.resources_list_changed == Some(true)
                            && sink.notify_resource_list_changed().await.is_err()
                        {
                            return Ok(());
                        }
                        if accepted.prompts_list_changed == Some(true)
                            && sink.notify_prompt_list_changed().await.is_err()
                        {
                            return Ok(());
                        }
                        for uri in watched.updated(self.executor.registry().plugins()) {
                            if sink.notify_resource_updated(uri).await.is_err() {
                                return Ok(());
                            }
                        }
                    }
                    Err(broadcast::error::RecvError::Closed) => return Ok(()),
                },
            }
        }
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let Some(reloader) = &self.reloader else { return };
        // Subscribed now, or (while the first load runs) once it is done: the first load is not
        // a change of the list the client is told about.
        let subscribed = self.loaded.is_none().then(|| reloader.subscribe());
        let (reloader, first_load) = (reloader.clone(), self.first_load());
        let (executor, watched) = (self.executor.clone(), self.watched.clone());
        let peer = context.peer;
        tokio::spawn(async move {
            let mut rx = match subscribed {
                Some(rx) => rx,
                None => {
                    first_load.await;
                    reloader.subscribe()
                }
            };
            loop {
                match rx.recv().await {
                    Ok(change)
                        if change.added.is_empty()
                            && change.changed.is_empty()
                            && change.removed.is_empty() => {}
                    Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {
                        if peer.notify_tool_list_changed().await.is_err()
                            || peer.notify_resource_list_changed().await.is_err()
                            || peer.notify_prompt_list_changed().await.is_err()
                        {
                            return; // the client is gone
                        }
                        for uri in watched.updated(executor.registry().plugins()) {
                            let updated = rmcp::model::ResourceUpdatedNotificationParam::new(uri);
                            if peer.notify_resource_updated(updated).await.is_err() {
                                return;
                            }
                        }
                    }
                    Err(broadcast::error::RecvError::Closed) => return,
                }
            }
        });
    }
}
